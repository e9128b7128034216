-- One round trip and nothing else: what a round trip costs on this machine.
SELECT 1;
