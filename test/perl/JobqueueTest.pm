# The cluster set-up and the waits the TAP tests of test/t/ share.
#
#   use JobqueueTest;
#   my $node = jq_node('lease_expiry', worker => 'quick');
#   wait_for_worker($node);
#
# make installcheck finds this module through -I test/perl (see the
# Makefile).

package JobqueueTest;

use strict;
use warnings;

use Exporter 'import';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;

our @EXPORT = qw(jq_node worker_attached wait_for wait_for_worker
  let_server_time_pass);

# Worker settings for tests that watch the worker work: a pass every
# 0.5 s, and a launcher that looks for new databases every second.
my %quick_worker = (
	'jobqueue.reap_interval' => '500ms',
	'jobqueue.launcher_interval' => '1s');

# jq_node($name, %options): a new node, initialized and started.
#   preload   => 1 (default): shared_preload_libraries = 'jobqueue';
#                0: the library is loaded by the sessions that use it.
#   worker    => 'on' (default), 'off' (jobqueue.worker_enabled = off: no
#                one but the test touches the jobs), or 'quick' (on, with
#                the short intervals above).
#   settings  => { name => value, ... }: more postgresql.conf settings
#                (they win over those of 'quick').
#   extension => 1 (default): CREATE EXTENSION jobqueue in database
#                postgres; 0: the test creates it where it wants it.
#   streaming => 1: a primary that standbys can stream from (its backups
#                can start them); 0 (default): not.
#   install_path => DIR: the PostgreSQL installation to run (default: the
#                one on PATH).
sub jq_node
{
	my ($name, %opt) = @_;
	my $preload = $opt{preload} // 1;
	my $worker = $opt{worker} // 'on';
	my $extension = $opt{extension} // 1;
	die "jq_node: worker => '$worker' is not on, off or quick"
	  unless $worker =~ /^(on|off|quick)$/;
	die 'jq_node: a worker setting needs preload => 1'
	  if !$preload && $worker ne 'on';

	my %settings;
	$settings{shared_preload_libraries} = 'jobqueue' if $preload;
	$settings{'jobqueue.worker_enabled'} = 'off' if $worker eq 'off';
	%settings = (%settings, %quick_worker) if $worker eq 'quick';
	%settings = (%settings, %{ $opt{settings} // {} });

	my $node = PostgreSQL::Test::Cluster->new($name,
		$opt{install_path} ? (install_path => $opt{install_path}) : ());
	$node->init(allows_streaming => $opt{streaming} // 0);
	$node->append_conf('postgresql.conf',
		join('', map { "$_ = '$settings{$_}'\n" } sort keys %settings))
	  if %settings;
	$node->start;
	$node->safe_psql('postgres', 'CREATE EXTENSION jobqueue') if $extension;
	return $node;
}

# Is a worker attached to database $db (default postgres)?  Polls until it
# is, and gives up after PostgreSQL::Test::Utils's timeout: true or false,
# for ok().
sub worker_attached
{
	my ($node, $db) = @_;
	return $node->poll_query_until($db // 'postgres',
		'SELECT attached FROM jobqueue.jq_worker_status()');
}

# wait_for($node, $db, $query, $what): poll until $query returns true;
# dies, saying it waited for $what, if it never does.  For the waits that
# are a test's precondition, not its assertion (those use ok() and
# poll_query_until).
sub wait_for
{
	my ($node, $db, $query, $what) = @_;
	$node->poll_query_until($db, $query)
	  or die "timed out waiting for $what";
	return;
}

# Wait until a worker is attached to $db (default postgres), or die.
sub wait_for_worker
{
	my ($node, $db) = @_;
	worker_attached($node, $db)
	  or die 'the worker did not attach to ' . ($db // 'postgres');
	return;
}

# Let $seconds of the server's clock pass (for tests that watch the worker
# do something, or do nothing, for a while): polls the server's now().
sub let_server_time_pass
{
	my ($node, $seconds) = @_;
	my $t0 = $node->safe_psql('postgres', 'SELECT now()');
	wait_for($node, 'postgres',
		"SELECT now() > '$t0'::timestamptz + interval '$seconds seconds'",
		"$seconds seconds of server time");
	return;
}

1;
