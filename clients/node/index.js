'use strict';

/**
 * jobqueue for Node.js: a producer (Client) and a worker (Worker) for the
 * jobqueue PostgreSQL extension, on node-postgres (pg).  Every call is a
 * jobqueue.jq_* SQL function.
 */
const { Client } = require('./lib/client');
const { Worker, CHANNEL } = require('./lib/worker');
const { PermanentError, RetryLater, FatalError, classify, errorKind } = require('./lib/errors');
const { Backoff } = require('./lib/backoff');

module.exports = { Client, Worker, PermanentError, RetryLater, FatalError, classify, errorKind, Backoff, CHANNEL };
