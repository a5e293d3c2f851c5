// The agent's messages on stderr, written so that they never hold up its
// poll loop: stderr is shared with the job, and a job that fills a pipe whose
// reader stopped reading would otherwise stop the renewals with it.
//
//   start_messages(opt.verbosity);   // once, before the first say()
//   say(1, "lock '%s' lost", key);   // formats and queues; never waits on stderr
//   ...
//   finish_messages();               // before main returns: what is queued gets a bounded time
//
// say() formats the line and copies it into a fixed ring of whole lines; a
// writer thread of the agent's writes them out, whole lines at a time. A line
// that does not fit while stderr is stuck is dropped and counted, and the
// count is said as soon as there is room ("N messages dropped: ...").
#pragma once

namespace edgelock_cli {

// Starts the writer thread, with every signal blocked in it so that the
// agent's handlers run on the main thread. Call from the main thread before
// any other thread exists. Should the thread not start, say() itself writes
// what stderr takes without waiting, and keeps or counts the rest.
void start_messages(int verbosity);

// A message on stderr, "edgelock: ..." and a newline, when the verbosity
// (0 quiet, 1 normal, 2 verbose) reaches `level`. A long line is cut.
void say(int level, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

// Waits a bounded time for what is queued to reach stderr, then returns
// whatever is left: the agent's exit must not wait on a stalled reader.
void finish_messages();

}  // namespace edgelock_cli
