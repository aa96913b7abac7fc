"""A wire fuzzer for a real name server and broker (``make fuzz``; bounded in tests/integration).

``frames`` builds the frames, ``pools`` the hostile values they draw from, ``runner`` sends them and
measures, ``logscan`` reads the server's log, ``state`` makes and checks the state a run must not harm, and
``campaign`` ties it together around a ``rocketq standalone`` child process.
"""

from rocketq.testing.fuzz.campaign import Campaign, CampaignResult
from rocketq.testing.fuzz.runner import FuzzConfig, FuzzReport

__all__ = ["Campaign", "CampaignResult", "FuzzConfig", "FuzzReport"]
