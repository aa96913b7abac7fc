"""``TaskSet`` lives in ``rocketq.common.tasks`` (shared with the broker); kept here for the client's imports."""

from rocketq.common.tasks import TaskSet

__all__ = ["TaskSet"]
