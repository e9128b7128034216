/* jobqueue--1.0--1.1.sql -- upgrade from 1.0 (the core) to 1.1 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION jobqueue UPDATE TO '1.1'" to load this file. \quit

-- 1.1 adds the background worker's status, queue statistics, event
-- counters and the role helpers.  A fresh CREATE EXTENSION runs the 1.0
-- script and then this one, so there is a single definition of each object.
