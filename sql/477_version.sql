--
-- jq_version(): the version of the loaded library beside the extension's,
-- and who may call it (admins and monitors).  The mismatched cases (an
-- update before the restart, a new library on an old schema) need two
-- libraries: test/t/028_library_version.pl.
--
SELECT library_version = extension_version AS same_version,
       library_version = (SELECT default_version FROM pg_catalog.pg_available_extensions
                          WHERE name = 'jobqueue') AS built_as_default_version,
       extension_version = (SELECT extversion FROM pg_catalog.pg_extension
                            WHERE extname = 'jobqueue') AS extension_as_installed
FROM jobqueue.jq_version();

CREATE ROLE regress_jq_version_monitor;
CREATE ROLE regress_jq_version_admin;
CREATE ROLE regress_jq_version_worker;
CREATE ROLE regress_jq_version_nobody;
SELECT jobqueue.jq_grant_monitor('regress_jq_version_monitor');
SELECT jobqueue.jq_grant_admin('regress_jq_version_admin');
SELECT jobqueue.jq_grant_worker('regress_jq_version_worker');
SELECT r AS role, has_function_privilege(r, 'jobqueue.jq_version()', 'EXECUTE') AS may_call
FROM unnest(ARRAY['regress_jq_version_monitor', 'regress_jq_version_admin',
                  'regress_jq_version_worker', 'regress_jq_version_nobody']) r;
SET ROLE regress_jq_version_monitor;
SELECT library_version = extension_version AS monitor_sees_same FROM jobqueue.jq_version();
RESET ROLE;
SET ROLE regress_jq_version_nobody;
SELECT test_helpers.try($$SELECT * FROM jobqueue.jq_version()$$);
RESET ROLE;
SELECT jobqueue.jq_revoke_monitor('regress_jq_version_monitor');
SELECT jobqueue.jq_revoke_admin('regress_jq_version_admin');
SELECT jobqueue.jq_revoke_worker('regress_jq_version_worker');
DROP ROLE regress_jq_version_monitor, regress_jq_version_admin,
          regress_jq_version_worker, regress_jq_version_nobody;
