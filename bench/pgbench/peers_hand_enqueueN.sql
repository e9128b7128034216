-- Peer benchmark (bench/peers.sh), hand-written SQL on the minimal table: :n
-- jobs per transaction in one INSERT.
INSERT INTO peers_hand.jobs (queue_name, payload)
SELECT :q, p
  FROM unnest(array_fill('{"task": "send_email", "user_id": 12345, "template": "welcome"}'::jsonb, ARRAY[:n::int])) AS p;
