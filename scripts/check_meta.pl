#!/usr/bin/perl
# Check META.json against jobqueue.control: META.json must be valid JSON,
# and its "version" and "provides"/"jobqueue"/"version" must be the
# control file's default_version. PGXN wants semantic versions (X.Y.Z), so
# a two-part default_version X.Y is written X.Y.0 in META.json.
# Usage: perl scripts/check_meta.pl [source directory]   (exits 1 on failure)
use strict;
use warnings;
use JSON::PP;

my $root = shift // '.';
my @errors;

open my $cf, '<', "$root/jobqueue.control" or die "check_meta: $root/jobqueue.control: $!\n";
my ($control) = map { /^\s*default_version\s*=\s*'([^']*)'/ ? $1 : () } <$cf>;
close $cf;
die "check_meta: no default_version in jobqueue.control\n" unless defined $control;

my $want = $control =~ /^\d+\.\d+$/ ? "$control.0" : $control;

open my $mf, '<', "$root/META.json" or die "check_meta: $root/META.json: $!\n";
my $text = do { local $/; <$mf> };
close $mf;
my $meta = eval { JSON::PP->new->utf8->relaxed(0)->decode($text) };
die "check_meta: META.json is not valid JSON: $@" unless defined $meta;

for my $field (qw(name abstract version maintainer license provides meta-spec)) {
	push @errors, "missing field \"$field\"" unless defined $meta->{$field};
}
push @errors, "name is \"" . ($meta->{name} // '') . "\", not \"jobqueue\""
	unless ($meta->{name} // '') eq 'jobqueue';
push @errors, "meta-spec version is not 1.0.x"
	unless (($meta->{'meta-spec'} // {})->{version} // '') =~ /^1\.0\.\d+$/;

my $version = $meta->{version} // '(none)';
push @errors, "version is \"$version\", jobqueue.control says default_version '$control' (expected \"$want\")"
	unless $version eq $want;

my $provided = (($meta->{provides} // {})->{jobqueue} // {});
my $pversion = $provided->{version} // '(none)';
push @errors, "provides.jobqueue.version is \"$pversion\", expected \"$want\""
	unless $pversion eq $want;
my $file = $provided->{file} // '';
push @errors, "provides.jobqueue.file \"$file\" does not exist"
	unless $file ne '' && -f "$root/$file";
my $doc = $provided->{docfile};
push @errors, "provides.jobqueue.docfile \"$doc\" does not exist"
	if defined $doc && !-f "$root/$doc";

if (@errors) {
	print STDERR "check_meta: META.json: $_\n" for @errors;
	exit 1;
}
print "META.json is valid JSON; version $version matches default_version '$control'\n";
