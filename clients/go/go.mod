module jobqueue

go 1.19

// The versions Debian 12 (bookworm) ships (golang-github-jackc-pgx-v4-dev
// and its dependencies); debian-goproxy.sh serves Debian's copies under
// them, for builds without network (README.md, "Module mode").
require (
	github.com/jackc/pgconn v1.11.0
	github.com/jackc/pgx/v4 v4.15.0
)

require (
	github.com/jackc/chunkreader/v2 v2.0.1 // indirect
	github.com/jackc/pgio v1.0.0 // indirect
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgproto3/v2 v2.2.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20200714003250-2b9c44734f2b // indirect
	github.com/jackc/pgtype v1.10.0 // indirect
	github.com/jackc/puddle v1.2.1 // indirect
	golang.org/x/crypto v0.4.0 // indirect
	golang.org/x/text v0.7.0 // indirect
)
