/* jobqueue--1.2--1.3.sql -- upgrade from 1.2 to 1.3 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION jobqueue UPDATE TO '1.3'" to load this file. \quit

-- 1.3 is about speed: fewer round trips and less table work per job.  A
-- fresh CREATE EXTENSION runs 1.0 and every upgrade script up to this one.
