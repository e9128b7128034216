# jobqueue -- PGXS build for the jobqueue extension
#
# The version has one source of truth: default_version in jobqueue.control.

EXTENSION = jobqueue
EXTVERSION = $(shell sed -n "s/^default_version[[:space:]]*=[[:space:]]*'\([^']*\)'.*/\1/p" $(EXTENSION).control)
# PGXN distribution: make dist (see the target at the end).

MODULE_big = jobqueue
OBJS = $(patsubst %.c,%.o,$(sort $(wildcard src/*.c)))

# The install script of every version and every upgrade script.
DATA = $(sort $(wildcard sql/$(EXTENSION)--*.sql))

# Behaviour and error paths (pg_regress): inputs in sql/, outputs in expected/.
REGRESS = $(patsubst sql/%.sql,%,$(sort $(wildcard sql/[0-9]*.sql)))
# UTF8 and the C locale, whatever the machine's: error messages are cut on
# UTF-8 character boundaries, and text sorts the same everywhere.
REGRESS_OPTS = --temp-instance=tmp_check_regress --temp-config=test/regress.conf \
	--load-extension=$(EXTENSION) --encoding=UTF8 --no-locale

# Concurrency (isolation tester): specs and outputs under test/isolation/.
ISOLATION = $(patsubst test/isolation/specs/%.spec,%,$(sort $(wildcard test/isolation/specs/*.spec)))
ISOLATION_OPTS = --inputdir=test/isolation --temp-instance=tmp_check_iso \
	--temp-config=test/regress.conf --load-extension=$(EXTENSION)

# Crashes, restarts and the background worker (PostgreSQL::Test::Cluster).
TAP_TESTS = 1
PROVE_TESTS = $(sort $(wildcard test/t/*.pl))

# Warnings are errors; the -Wno-* are the ones PostgreSQL's own headers trip.
PG_CFLAGS = -Wall -Wextra -Werror -Wno-unused-parameter \
	-Wno-missing-field-initializers -Wno-sign-compare -Wno-cast-function-type
PG_CPPFLAGS = -I$(srcdir)/src -DJQ_LIBRARY_VERSION='"$(EXTVERSION)"'

EXTRA_CLEAN = tmp_check_regress tmp_check_pgtap results_pgtap

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# Every file includes src/jobqueue.h (the plan numbers, the shared structs):
# a change to it must rebuild them all, or the files of one build disagree.
$(OBJS): src/jobqueue.h
# jq_version() reports the version the library was built as.
src/version.o: $(EXTENSION).control

# The TAP tests share test/perl/JobqueueTest.pm.  prove runs in $(srcdir),
# so the path is relative to it; PGXS resets PROVE_FLAGS (it is the user's,
# as in make PROVE_FLAGS=--verbose), hence here, after the include.
PG_PROVE_FLAGS += -I test/perl

# Schema tests written with pgTAP, run through pg_regress so there is one
# harness; they live under test/pgtap/{sql,expected}.
PGTAP_TESTS = $(patsubst test/pgtap/sql/%.sql,%,$(sort $(wildcard test/pgtap/sql/*.sql)))

installcheck: installcheck-pgtap

.PHONY: installcheck-pgtap
installcheck-pgtap:
	$(pg_regress_installcheck) --inputdir=test/pgtap --outputdir=results_pgtap \
		--temp-instance=tmp_check_pgtap --temp-config=test/regress.conf \
		--dbname=jobqueue_pgtap $(PGTAP_TESTS)

# PGXN distribution of the committed HEAD (not of uncommitted changes):
# jobqueue-$(EXTVERSION).zip, every file under the prefix jobqueue-$(EXTVERSION)/.
# scripts/check_meta.pl (run by scripts/test.sh) keeps META.json's version
# equal to default_version.
.PHONY: dist
dist:
	git archive --format zip --prefix=$(EXTENSION)-$(EXTVERSION)/ -o $(EXTENSION)-$(EXTVERSION).zip HEAD
