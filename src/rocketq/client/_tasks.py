"""``TaskSet`` lives in ``rocketq.remoting.tasks`` (shared with the broker); kept here for the client's imports."""

from rocketq.remoting.tasks import TaskSet

__all__ = ["TaskSet"]
