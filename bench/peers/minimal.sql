-- The minimal hand-written queue of the peer benchmark (bench/peers.sh): the
-- columns the claim, the fenced completion and a reaper need, the primary
-- key and the two partial indexes a careful user writes for the claim and
-- for the reaper (the same as jobqueue's jobs_claim_idx and jobs_lease_idx),
-- nothing else: no further indexes, triggers, or table options.
DROP SCHEMA IF EXISTS peers_hand CASCADE;
CREATE SCHEMA peers_hand;
CREATE TYPE peers_hand.job_status AS ENUM ('pending', 'running', 'succeeded', 'dead');
CREATE TABLE peers_hand.jobs
(
	id				bigint		GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	queue_name		text		NOT NULL,
	payload			jsonb		NOT NULL,
	status			peers_hand.job_status NOT NULL DEFAULT 'pending',
	priority		int			NOT NULL DEFAULT 0,
	available_at	timestamptz NOT NULL DEFAULT now(),
	attempt_count	int			NOT NULL DEFAULT 0,
	max_attempts	int			NOT NULL DEFAULT 8,
	lease_owner		text,
	lease_token		bigint		NOT NULL DEFAULT 0,
	lease_expires_at timestamptz,
	started_at		timestamptz,
	finished_at		timestamptz,
	created_at		timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX jobs_claim_idx ON peers_hand.jobs
	(queue_name, priority DESC, available_at, id)
	WHERE status = 'pending';
CREATE INDEX jobs_lease_idx ON peers_hand.jobs (lease_expires_at)
	WHERE status = 'running';
