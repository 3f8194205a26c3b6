// Package bash runs the "bash" handler of subscriptions: for each delivery it
// runs a program the operator allowed, never a shell line written by a model.
// Despite its name, no shell is involved anywhere.
//
// # Security model
//
// A subscription is written by a model, so everything it says is treated as
// hostile. The model controls only:
//
//   - which command runs, by naming one of the operator's commands
//     (Options.Commands); the name maps to an absolute program path;
//   - the arguments, passed as argv, one string each, with no word
//     splitting, globbing, quoting or command substitution. The only
//     expansion is the placeholders $MCPE_NAME and ${MCPE_NAME} for the
//     variables below; anything else, such as $HOME, $(...), backticks, ';'
//     or '|', reaches the program as plain text. Expanded values are not
//     expanded again. A run whose argument a placeholder made start with '-'
//     is refused, so that what an event sender wrote never reaches the
//     program as an option, unless the command sets
//     AllowOptionPlaceholders; a command with AllowOptions false also
//     refuses the arguments the model wrote with a leading '-';
//   - the input mode (how the event reaches the program) and the timeout, up
//     to Options.MaxTimeout.
//
// The model never controls the program's path, its environment, its working
// directory or its sandbox:
//
//   - the environment holds only the MCPE_* variables, PATH (DefaultPath),
//     HOME and PWD (both the working directory) and the variables the
//     operator set for the command (Command.Env, which may override PATH and
//     HOME). Nothing is inherited from the server's environment;
//   - every run gets a fresh, empty working directory under
//     Options.WorkRoot, removed when the run ends;
//   - the program runs in a new session and process group. When the run's
//     timeout passes or the server cancels the run, everything the program
//     started is killed with SIGKILL, children and grandchildren included,
//     and so it is when the program exits: nothing it started in the
//     background outlives the run, not even in a session of its own (setsid,
//     a daemon). Inside the sandbox its pid namespace dies with it; without
//     it, on Linux, the program is the child of a reaper (see Limits and
//     leftovers);
//   - the program's resources are bounded (Command.Limits);
//   - at most Options.MaxConcurrent programs run at once; further runs wait
//     for a slot;
//   - at most 64 KiB of output are kept.
//
// # Sandbox
//
// With bubblewrap (bwrap, Options.Sandbox), each program runs in new
// namespaces (user when available, pid, ipc, uts, cgroup and network:
// --unshare-all) with no capabilities (--cap-drop ALL), in a session of its
// own (--new-session), killed with the server (--die-with-parent). It sees
// the host's file system read-only (--ro-bind / /), a minimal /dev, its own
// /proc, a private empty /tmp, and, writable, its working directory and the
// command's WritablePaths. It has no network, not even the host's loopback,
// unless the command sets Network. Its whole pid namespace dies with it, so
// nothing escapes the kill.
//
// The server's state is not in sight: Options.HiddenPaths (the database and
// its directory, the configuration file, the data directory) are replaced by
// empty directories and files, and so are the home and runtime directories
// of the server's user (its keys and tokens; the sockets of its session,
// such as D-Bus's, through which a program would act outside the sandbox)
// and Options.WorkRoot, where other runs work. A command's program,
// ReadablePaths and WritablePaths are bound again where they lie in the home
// or the work root, and a hidden path stays hidden inside them.
//
// Without bubblewrap (Sandbox "off", or "auto" when bwrap is missing or does
// not work) a program runs as the server's user with the server's access to
// files and network, the hidden paths included; only the environment,
// working directory, timeout, limits and output bounds above apply.
//
// # Limits and leftovers
//
// On Linux a run starts the server's own executable again as its helper (the
// first argument helperArg, with helperMarkEnv, which only the server sets,
// makes the package's init run it instead of the server): it sets the limits
// with setrlimit on its own process, then executes the program, which
// inherits them. Inside the sandbox the helper is the sandbox's first
// process, so the limits are set inside the run's user namespace, where
// RLIMIT_NPROC counts the run's processes alone; set on bubblewrap before it
// makes the namespace, the count would hold every process of the server's
// user. The other ways fall short: os/exec sets no limit on a child,
// prlimit(2) on a child already started races with what it does first, and
// bubblewrap has no option for it.
//
// Without the sandbox the helper runs first as a reaper: a sub-reaper
// (PR_SET_CHILD_SUBREAPER) whose child is the helper that sets the limits
// and becomes the program. Whatever the program leaves behind is handed to
// the reaper when its parent exits, even outside the program's session; when
// the program has exited, or when the server sends SIGTERM at the timeout or
// dies (Pdeathsig), the reaper kills its children until none is left and
// passes the program's wait status back on a pipe. A program running as the
// server's user can still kill the reaper first and escape: use the sandbox
// for programs that should not be trusted with that. Other systems run the
// program directly, with neither limits nor reaper.
//
// # Variables
//
// Every run sets these variables in the environment and offers them as
// placeholders in the arguments:
//
//	MCPE_SUBSCRIPTION_ID  the subscription
//	MCPE_DELIVERY         "event" or "batch"
//	MCPE_EVENT_ID         for an event: its id
//	MCPE_EVENT_TYPE       its type, such as "github.issue.opened"
//	MCPE_EVENT_PRIORITY   its priority: low, normal, high or critical
//	MCPE_EVENT_TIMESTAMP  its timestamp, RFC 3339
//	MCPE_EVENT_TAGS       its tags, comma-separated
//	MCPE_EVENT_COUNT      for a batch: the number of events in it
//	MCPE_REMAINING        for a batch: the events left for later batches
//
// and two that carry the payload itself:
//
//	MCPE_EVENT_DATA       for an event: its data, as JSON
//	MCPE_EVENTS           for a batch: its events, as a JSON array
//
// The names of the other kind of delivery are set to the empty string. The
// two payload variables are always available as placeholders, but are set in
// the environment only in the "env" input mode: in the other modes the
// payload reaches the program through the channel chosen, and a large event
// cannot make the run fail for a variable the program does not read.
//
// # Input modes
//
//   - "stdin" (the default): the payload (the event JSON for an event, or
//     {"subscriptionId", "events", "remaining"} for a batch) on standard
//     input;
//   - "env": standard input is empty, and the payload variables above are
//     set;
//   - "args": standard input is empty, and the payload is appended as the
//     last argument.
//
// Linux caps one argument or one environment variable at 128 KiB
// (MAX_ARG_STRLEN): a run whose argument or variable would be longer fails
// with an error that suggests input "stdin", which has no limit.
//
// # Outcome
//
// Standard output and standard error are captured together, in the order
// written. An exit status of zero is a success; anything else fails the
// delivery with an error that gives the status, or "killed after <timeout>",
// and the tail of the output. A command is never retried.
package bash
