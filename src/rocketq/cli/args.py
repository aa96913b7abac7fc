"""Argument types and shared options of the admin commands: a bad value is a usage error (exit 2) that names
the option and says what is wrong, before anything is sent."""

from __future__ import annotations

import argparse
import datetime as dt
import time

from rocketq.client.lowlevel import id_bytes


def parse_timestamp(text: str) -> int:
    """Epoch ms from 'now', epoch ms/s digits, yyyyMMddHHmmss[SSS] (local time) or ISO 8601."""
    if text == "now":
        return int(time.time() * 1000)
    if text.isdigit():
        if len(text) in (14, 17):
            fmt = "%Y%m%d%H%M%S%f" if len(text) == 17 else "%Y%m%d%H%M%S"
            value = text + "000" if len(text) == 17 else text
            return int(dt.datetime.strptime(value, fmt).timestamp() * 1000)
        n = int(text)
        return n if n > 10**11 else n * 1000
    return int(dt.datetime.fromisoformat(text).timestamp() * 1000)


def timestamp(text: str) -> int:
    try:
        return parse_timestamp(text)
    except (ValueError, OverflowError, OSError):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a time: use epoch ms, yyyyMMddHHmmss[SSS] (local time), ISO 8601 or 'now'"
        ) from None


def msg_id(text: str) -> str:
    """A client (UNIQ_KEY) or offset message id: 32 hex digits (56 for IPv6), upper-cased."""
    try:
        id_bytes(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text.upper()


def positive_int(text: str) -> int:
    n = _int(text)
    if n < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be 1 or more")
    return n


def non_negative_int(text: str) -> int:
    n = _int(text)
    if n < 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be 0 or more")
    return n


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None


def key_value(text: str) -> tuple[str, str]:
    k, sep, v = text.partition("=")
    if not sep or not k:
        raise argparse.ArgumentTypeError(f"{text!r} is not KEY=VALUE")
    return k, v


def target_args(p: argparse.ArgumentParser) -> None:
    g = p.add_mutually_exclusive_group()
    g.add_argument("-c", "--cluster", help="every master of this cluster")
    g.add_argument("-b", "--broker", help="one broker address host:port")


def body_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--print-body", action="store_true", help="include the body (UTF-8, or hex) in the output")
