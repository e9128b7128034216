-- Peer benchmark (bench/peers.sh), hand-written SQL on the minimal table: one
-- job per transaction.
INSERT INTO peers_hand.jobs (queue_name, payload)
VALUES (:q, '{"task": "send_email", "user_id": 12345, "template": "welcome"}');
