-- jobqueue: a complete that matches no job (the fixed cost of one call).
SELECT jobqueue.jq_complete(0, 0);
