-- Hand-written SQL in one server call: complete the jobs the previous turn
-- claimed, then claim the next :n, as TWO statements
-- (public.rt_two_statements, created by bench/roundtrip.sh).  Run with
-- -D ids={} -D tokens={}.
SELECT r.ids, r.tokens FROM public.rt_two_statements(:q, :ids, :tokens, :n, :owner) r \gset
