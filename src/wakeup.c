/*-------------------------------------------------------------------------
 *
 * wakeup.c
 *	  The "queue has new work" hint.
 *
 * Workers may LISTEN on channel "jobqueue" to hear, by queue name, that a
 * queue has new ready work.  This is only a hint: it is sent at commit, may
 * be coalesced, and is lost if no one listens.  The jobs table is the truth,
 * and a worker that polls jq_claim finds every job without it.
 *
 *-------------------------------------------------------------------------
 */
#include "jobqueue.h"

#include "commands/async.h"

/*
 * Ask for a wake-up of queue_name's listeners when the current transaction
 * commits.  Nothing is sent if it aborts.
 */
void
jq_wakeup_queue(const char *queue_name)
{
	Async_Notify(JQ_NOTIFY_CHANNEL, queue_name);
}
