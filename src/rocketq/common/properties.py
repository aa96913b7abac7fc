"""Java properties text: config files, UPDATE_BROKER_CONFIG / UPDATE_NAMESRV_CONFIG bodies and their answers
(shared by the servers and the admin client)."""

from __future__ import annotations


def parse_properties(text: str) -> dict[str, str]:
    """Java properties text (a file's, or UPDATE_BROKER_CONFIG's body)."""
    out: dict[str, str] = {}
    pending = ""
    for raw_line in text.splitlines():
        line = raw_line.strip() if not pending else raw_line.lstrip()
        if not pending and (not line or line[0] in "#!"):
            continue
        if line.endswith("\\") and not line.endswith("\\\\"):
            pending += line[:-1]
            continue
        line = pending + line
        pending = ""
        for i, ch in enumerate(line):
            if ch in "=:" or ch.isspace():
                key, rest = line[:i], line[i + 1 :].lstrip()
                if ch.isspace() and rest[:1] in ("=", ":"):
                    rest = rest[1:].lstrip()
                break
        else:
            key, rest = line, ""
        out[key.strip()] = rest.strip()
    return out
