/* jobqueue--1.3--1.4.sql -- upgrade from 1.3 to 1.4 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION jobqueue UPDATE TO '1.4'" to load this file. \quit

-- 1.4 is about trust under real conditions: group bookkeeping that cannot
-- drift or deadlock, and what operators and clients need to run it.  A
-- fresh CREATE EXTENSION runs 1.0 and every upgrade script up to this one.
