'use strict';

/** Reconnect delays in ms: doubling from base to cap, each uniform in [d/2, d]. */
class Backoff {
  constructor(base = 100, cap = 10000, rand = Math.random) {
    this.base = base;
    this.cap = cap;
    this.rand = rand;
    this.failures = 0;
  }

  next() {
    const d = Math.min(this.cap, this.base * 2 ** this.failures);
    this.failures++;
    return d * (0.5 + 0.5 * this.rand());
  }

  reset() {
    this.failures = 0;
  }
}

module.exports = { Backoff };
