-- Hand-written SQL in one server call: complete the jobs the previous turn
-- claimed and claim the next :n in ONE statement (public.rt_one_statement,
-- created by bench/roundtrip.sh).  Run with -D ids={} -D tokens={}.
SELECT r.ids, r.tokens FROM public.rt_one_statement(:q, :ids, :tokens, :n, :owner) r \gset
