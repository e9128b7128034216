import random


class Backoff:
    """Reconnect delays: doubling from ``base`` to ``cap`` seconds, with
    jitter (each delay is uniform in [delay/2, delay])."""

    def __init__(self, base=0.1, cap=10.0, rand=random.random):
        self.base = base
        self.cap = cap
        self._rand = rand
        self.failures = 0

    def next(self):
        delay = min(self.cap, self.base * (2 ** self.failures))
        self.failures += 1
        return delay * (0.5 + 0.5 * self._rand())

    def reset(self):
        self.failures = 0
