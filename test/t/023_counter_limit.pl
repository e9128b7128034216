# jobqueue.max_counter_queues bounds the shared memory of the event
# counters: with the limit at its minimum and more queues than that, the
# table never holds more entries than the limit, and the events of the
# queues that found it full are counted in the one overflow row
# (dbid NULL, queue_name '*') instead of being lost.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('counter_limit');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'jobqueue'");
$node->append_conf('postgresql.conf', 'jobqueue.worker_enabled = off');
$node->append_conf('postgresql.conf', 'jobqueue.max_counter_queues = 16');
$node->start;

$node->safe_psql('postgres', 'CREATE EXTENSION jobqueue');
is($node->safe_psql('postgres', 'SHOW jobqueue.max_counter_queues'), '16', 'the limit is at its minimum');

# 24 queues, one enqueue each, each in its own transaction
$node->safe_psql('postgres',
	"SELECT jobqueue.jq_create_queue('lim_' || i) FROM generate_series(1, 24) i");
$node->safe_psql('postgres', "SELECT jobqueue.jq_enqueue('lim_$_', '{}')") for 1 .. 24;

is( $node->safe_psql('postgres',
		"SELECT count(*) FROM jobqueue.jq_counters(true) WHERE queue_name IS DISTINCT FROM '*'"),
	'16', 'no more entries than jobqueue.max_counter_queues');
is( $node->safe_psql('postgres',
		"SELECT dbid IS NULL, enqueued FROM jobqueue.jq_counters() WHERE queue_name = '*'"),
	't|8', 'the overflow row counts the events of the other 8 queues');
is($node->safe_psql('postgres', 'SELECT sum(enqueued) FROM jobqueue.jq_counters()'),
	'24', 'no event is lost');

# the overflow row sums all databases, and is shown in each of them
$node->safe_psql('postgres', 'CREATE DATABASE other');
$node->safe_psql('other', 'CREATE EXTENSION jobqueue');
$node->safe_psql('other', "SELECT jobqueue.jq_create_queue('elsewhere')");
$node->safe_psql('other', "SELECT jobqueue.jq_enqueue('elsewhere', '{}')");
is( $node->safe_psql('other',
		"SELECT queue_name, enqueued FROM jobqueue.jq_counters() ORDER BY queue_name"),
	'*|9', 'a queue of another database is counted in the overflow row too');

# a reset frees the entries of the database and zeroes the overflow row;
# the freed entries are used again
$node->safe_psql('postgres', 'SELECT jobqueue.jq_counters_reset()');
is($node->safe_psql('postgres', 'SELECT count(*) FROM jobqueue.jq_counters(true)'),
	'0', 'after a reset, no entries and no overflow row are shown');
$node->safe_psql('postgres', "SELECT jobqueue.jq_enqueue('lim_$_', '{}')") for 20 .. 24;
is( $node->safe_psql('postgres',
		"SELECT string_agg(queue_name || '=' || enqueued, ',' ORDER BY queue_name) FROM jobqueue.jq_counters()"),
	'lim_20=1,lim_21=1,lim_22=1,lim_23=1,lim_24=1', 'freed entries are used again');

# the pending table of a backend is flushed into the full table without an
# error, also from a transaction that touched every queue
$node->safe_psql('postgres', "SELECT jobqueue.jq_enqueue('lim_' || i, '{}') FROM generate_series(1, 24) i");
is( $node->safe_psql('postgres',
		"SELECT count(*) FILTER (WHERE queue_name <> '*'), sum(enqueued) FROM jobqueue.jq_counters(true)"),
	'16|29', 'a transaction with more queues than the limit counts every event');

$node->stop;
done_testing();
