// What a kvbench process leaves behind when it is stopped: nothing but the
// files it finished. Temporaries ("<target>.tmp.<pid>", AtomicFile's and the
// plots') and child processes (gnuplot) are registered here while they live;
// SIGINT, SIGTERM and SIGHUP remove the temporaries, kill the children and
// exit with 128 + the signal (130, 143, 129), after an optional message. A
// kill -9 cannot be caught: the temporaries it leaves are removed by the
// next writer of the same target (remove_stale_temporaries) or the next
// writer of the run folder (under its lock).
#pragma once

#include <sys/types.h>

#include <string>

namespace kvbench {

// Installs the handlers (once per process; the CLI does it before any
// command runs). Later calls do nothing.
void install_exit_cleanup();

// Printed to stderr by the handlers before exiting (at most 4095 bytes;
// "" for none). Not thread-safe against a signal arriving meanwhile: set it
// before the work it describes starts.
void set_interrupt_message(const std::string& message);

// A temporary file that the handlers remove (by absolute or working-directory
// relative path: the process never changes directory). Returns a slot to
// pass to forget_temporary, or -1 when every slot is taken (the file is then
// removed only by the next writer).
int register_temporary(const std::string& path);
void forget_temporary(int slot);

// A child process that the handlers kill (SIGKILL) before exiting.
int register_child(pid_t pid);
void forget_child(int slot);

// "<name>.tmp.<digits>": the name of a temporary. Sets *pid to the digits'
// value when it fits a pid.
bool is_temporary_name(const std::string& name, long* pid = nullptr);

// Removes "<target>.tmp.<pid>" files beside `target` whose process is gone
// (kill(pid, 0) says ESRCH): what a kill -9 left of an earlier write of the
// same file. Regular files only (never a link, never followed); errors are
// ignored (this is housekeeping, the write that follows reports its own).
void remove_stale_temporaries(const std::string& target);

}  // namespace kvbench
