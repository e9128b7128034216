-- jobqueue: claim one job (latency of the claim alone).
SELECT count(*) FROM jobqueue.jq_claim(:q, 1, :owner);
