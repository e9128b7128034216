# Library and schema of different versions: the previous release's library
# still loaded while this one is installed, then this library on the
# previous release's schema.
#
#   - ALTER EXTENSION jobqueue UPDATE before the restart stops with 55000
#     and a hint to restart, and changes nothing;
#   - after the restart, the worker warns that the database is not updated,
#     with a hint to run the update;
#   - after the update, jq_version() reports the same version twice.
#
# The previous library is built from the release's source, which
# scripts/test.sh extracts from the git history into previous-release/
# (jq_previous_release in scripts/common.sh), or from
# $JQ_PREVIOUS_RELEASE.  The server runs from a private copy of the
# installation, so that replacing its library disturbs nothing else.

use strict;
use warnings;

use File::Copy;
use File::Path qw(make_path);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use JobqueueTest;
use Test::More;

my $source = $ENV{JQ_PREVIOUS_RELEASE} // 'previous-release';
plan skip_all => "no source of the previous release in $source (scripts/test.sh extracts it from the git history)"
  unless -f "$source/jobqueue.control";

sub control_version
{
	my ($file) = @_;
	open my $fh, '<', $file or die "$file: $!";
	while (<$fh>)
	{
		return $1 if /^default_version\s*=\s*'([^']*)'/;
	}
	die "no default_version in $file";
}
my $previous = control_version("$source/jobqueue.control");
my $current = control_version('jobqueue.control');

sub pg_config
{
	my ($what) = @_;
	my $out = `pg_config --$what`;
	die "pg_config --$what failed" if $?;
	chomp $out;
	return $out;
}
my ($bindir, $pkglibdir, $sharedir) = map { pg_config($_) } qw(bindir pkglibdir sharedir);

# the previous library, built from its own source
my $build = PostgreSQL::Test::Utils::tempdir('previous_build');
system("cp -R '$source/.' '$build'") == 0 or die 'copying the previous release failed';
system("make -s -C '$build' PG_CONFIG='$bindir/pg_config' jobqueue.so >'$build/build.log' 2>&1") == 0
  or die "building the previous release failed: see $build/build.log";

# a private copy of the installation (the binaries find share/ and lib/
# relative to themselves), without the JIT bitcode
my $root = PostgreSQL::Test::Utils::tempdir('installation');
for my $path ($bindir, $pkglibdir, $sharedir)
{
	make_path("$root$path");
	system("tar -C '$path' --exclude=./bitcode -cf - . | tar -C '$root$path' -xf -") == 0
	  or die "copying $path failed";
}
my $library = "$root$pkglibdir/jobqueue.so";
sub install_library
{
	my ($from) = @_;
	# a new file under the old name: running processes keep the old one
	copy($from, "$library.new") or die "copying $from: $!";
	rename("$library.new", $library) or die "installing $from: $!";
}
install_library("$build/jobqueue.so");

my $bin_parent = $bindir =~ s{/bin/?$}{}r;
my $node = jq_node('library_version', worker => 'quick', extension => 0,
	install_path => "$root$bin_parent");
$node->safe_psql('postgres', "CREATE EXTENSION jobqueue VERSION '$previous'");
$node->safe_psql('postgres', q{
	SELECT jobqueue.jq_create_queue('lv');
	SELECT jobqueue.jq_enqueue('lv', '{"n": 1}');
});

# this release installed, the server not restarted
install_library("$pkglibdir/jobqueue.so");
my ($ret, $stdout, $stderr) = $node->psql('postgres', 'ALTER EXTENSION jobqueue UPDATE',
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
isnt($ret, 0, "ALTER EXTENSION UPDATE with the $previous library still loaded fails");
like($stderr, qr/ERROR:  55000: the jobqueue library loaded in this session is older than version $current/,
	'with 55000, saying the loaded library is older');
like($stderr, qr/HINT:  Restart the server so that the new library is loaded/, 'and a hint to restart');
is($node->safe_psql('postgres', "SELECT extversion FROM pg_extension WHERE extname = 'jobqueue'"),
	$previous, 'the extension stays at its version');

# restarted: this library on the previous schema
my $log_offset = -s $node->logfile;
$node->restart;
ok( $node->wait_for_log(
		qr/WARNING:  jobqueue library \Q$current\E serves database "postgres", where the extension is at version \Q$previous\E/,
		$log_offset),
	'the worker warns that the database is not updated');
like(slurp_file($node->logfile, $log_offset), qr/HINT:  Run ALTER EXTENSION jobqueue UPDATE in that database\./,
	'with a hint to run the update');

$node->safe_psql('postgres', 'ALTER EXTENSION jobqueue UPDATE');
is($node->safe_psql('postgres', 'SELECT library_version, extension_version FROM jobqueue.jq_version()'),
	"$current|$current", 'after the update, jq_version() reports the same version twice');
is( $node->safe_psql('postgres',
		"SELECT count(*) FROM jobqueue.jq_claim('lv', 10, 'w')"),
	'1', 'the job enqueued with the previous library is claimed');

$node->stop;
done_testing();
