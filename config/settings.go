package config

// Every setting a user gives through the environment is declared here,
// once: a constant naming the variable, and a row of Settings saying its
// flag, default and meaning. The code that reads a setting uses the
// constant; internal/archtest fails when a THOUGHTBOX_ name is spelled as
// a name anywhere else in the product, when prose names one the table
// lacks, and when the table and the README's settings table disagree.
const (
	EnvDataDir   = "THOUGHTBOX_DATA_DIR"
	EnvProject   = "THOUGHTBOX_PROJECT"
	EnvStorage   = "THOUGHTBOX_STORAGE"
	EnvPartition = "THOUGHTBOX_PARTITION"
	// EnvAgentName names the author of thoughts written from the command
	// line; EnvAgentID is the agent's id in a server's commits.
	EnvAgentName = "THOUGHTBOX_AGENT_NAME"
	EnvAgentID   = "THOUGHTBOX_AGENT_ID"

	// The MCP server's (seed 000).
	EnvTransport = "THOUGHTBOX_TRANSPORT"
	EnvHost      = "HOST"
	EnvPort      = "PORT"
	// EnvHTTPMaxSessions caps the open MCP sessions over HTTP; past it the
	// one idle longest is closed, and with none idle initialize is
	// refused.
	EnvHTTPMaxSessions = "THOUGHTBOX_HTTP_MAX_SESSIONS"
	EnvAuthToken       = "THOUGHTBOX_AUTH_TOKEN"
	// EnvAuthTokensFile names a file of bearer tokens, each with the agent
	// identity it stands for and the projects it may read or write.
	EnvAuthTokensFile = "THOUGHTBOX_AUTH_TOKENS_FILE"
	// EnvAllowedOrigins lists, comma-separated, the browser origins HTTP
	// requests may come from besides local ones.
	EnvAllowedOrigins = "THOUGHTBOX_ALLOWED_ORIGINS"
	// EnvAutoCreateSession, when false, has the MCP server refuse a
	// thought sent while no session is active instead of creating one
	// (seed 000 autoCreateSession). Default true.
	EnvAutoCreateSession = "THOUGHTBOX_AUTO_CREATE_SESSION"
	// EnvReasoningSession binds a server to a session (seed 000
	// ServerConfig reasoningSessionId: "pre-load specific session").
	EnvReasoningSession = "THOUGHTBOX_REASONING_SESSION_ID"
	// EnvExportDirs lists folders, besides DIR/exports, that session
	// export {destination} may write into, separated as PATH is (: or ;
	// on Windows); serve --export-dir adds to it.
	EnvExportDirs      = "THOUGHTBOX_EXPORT_DIRS"
	EnvDisableThoughts = "DISABLE_THOUGHT_LOGGING"

	// EnvMaxThoughtBytes bounds a thought's text (bytes; a K or M suffix
	// counts binary units). Default ledger.DefaultMaxThoughtBytes.
	EnvMaxThoughtBytes = "THOUGHTBOX_MAX_THOUGHT_BYTES"
	// EnvLockTimeout is how long a writer waits for a lock another
	// process holds (a Go duration, e.g. 10s); see gitstore.Options.
	EnvLockTimeout = "THOUGHTBOX_LOCK_TIMEOUT"

	// The server's bounds on what one client may hold.
	EnvHTTPReadTimeout = "THOUGHTBOX_HTTP_READ_TIMEOUT" // reading one request body
	EnvHTTPIdleTimeout = "THOUGHTBOX_HTTP_IDLE_TIMEOUT" // a keep-alive connection idle this long is closed
	EnvHTTPMaxConns    = "THOUGHTBOX_HTTP_MAX_CONNS"    // open HTTP connections; more wait to be accepted
	EnvRootsTimeout    = "THOUGHTBOX_ROOTS_TIMEOUT"     // a client's answer to roots/list
	// EnvMaxOpenProjects caps the projects kept open besides the
	// server's own; EnvProjectIdle closes one unused this long
	// (project/pool).
	EnvMaxOpenProjects = "THOUGHTBOX_MAX_OPEN_PROJECTS"
	EnvProjectIdle     = "THOUGHTBOX_PROJECT_IDLE_TIMEOUT"

	// EnvEventsEnabled turns the JSONL event stream on (1, true, yes or
	// on, any case); EnvEventsDest is where it goes: "stderr" (the
	// default) or a file path, appended to. Never stdout, which carries
	// the MCP protocol under stdio.
	EnvEventsEnabled = "THOUGHTBOX_EVENTS_ENABLED"
	EnvEventsDest    = "THOUGHTBOX_EVENTS_DEST"

	// EnvNotebookTimeout bounds one notebook run (a Go duration, e.g.
	// 10s); default DefaultNotebookTimeout.
	EnvNotebookTimeout = "THOUGHTBOX_NOTEBOOK_TIMEOUT"

	// The RLM loop's limits (seed 004: "maximum 12 iterations
	// (configurable)", a 5-second timeout per REPL block).
	EnvRLMMaxIterations = "THOUGHTBOX_RLM_MAX_ITERATIONS"
	EnvRLMBlockTimeout  = "THOUGHTBOX_RLM_BLOCK_TIMEOUT"
	EnvRLMMaxOutput     = "THOUGHTBOX_RLM_MAX_OUTPUT"
	EnvRLMMemory        = "THOUGHTBOX_RLM_MEMORY"

	// EnvAutoPush names a remote to push a session to when it closes;
	// EnvAutoPushInterval, when set, has it also push sessions still
	// open, at most this often (a Go duration).
	EnvAutoPush         = "THOUGHTBOX_AUTO_PUSH"
	EnvAutoPushInterval = "THOUGHTBOX_AUTO_PUSH_INTERVAL"
	// EnvAutoPull names a remote (a name, URL or path) that `thoughtbox
	// serve` pulls from in the background, every EnvAutoPullInterval (a
	// Go duration, default DefaultAutoPullInterval).
	EnvAutoPull         = "THOUGHTBOX_AUTO_PULL"
	EnvAutoPullInterval = "THOUGHTBOX_AUTO_PULL_INTERVAL"
	// EnvGitToken authenticates to http(s) remotes (as the password of
	// basic auth, which GitHub, GitLab and Gitea accept for tokens);
	// EnvGitUser is the user name sent with it (default thoughtbox).
	EnvGitToken = "THOUGHTBOX_GIT_TOKEN"
	EnvGitUser  = "THOUGHTBOX_GIT_USER"
	// EnvSSHKey names a private key file for ssh remotes; without it the
	// ssh agent is used.
	EnvSSHKey           = "THOUGHTBOX_SSH_KEY"
	EnvSSHKeyPassphrase = "THOUGHTBOX_SSH_KEY_PASSPHRASE"
	// EnvFileTransport chooses how paths and file:// URLs are served:
	// "git" runs git-upload-pack/git-receive-pack (the default when they
	// are installed), "builtin" uses go-git's in-process server.
	EnvFileTransport = "THOUGHTBOX_FILE_TRANSPORT"
	// EnvPushHookBudget bounds the time the pre-push hook of a code
	// repository adds to a git push (a Go duration; default
	// DefaultPushHookBudget): what it has not sent by then is queued.
	EnvPushHookBudget = "THOUGHTBOX_PUSH_HOOK_BUDGET"

	// The Observatory's (seed 000, plus the abandonment and live
	// windows, which the seeds leave to the implementation).
	EnvObservatoryEnabled        = "THOUGHTBOX_OBSERVATORY_ENABLED"
	EnvObservatoryPort           = "THOUGHTBOX_OBSERVATORY_PORT"
	EnvObservatoryHTTPAPI        = "THOUGHTBOX_OBSERVATORY_HTTP_API"
	EnvObservatoryCORS           = "THOUGHTBOX_OBSERVATORY_CORS"
	EnvObservatoryMaxConnections = "THOUGHTBOX_OBSERVATORY_MAX_CONNECTIONS"
	EnvObservatoryAbandonAfter   = "THOUGHTBOX_OBSERVATORY_ABANDON_AFTER"
	EnvObservatoryLiveWindow     = "THOUGHTBOX_OBSERVATORY_LIVE_WINDOW"

	// EnvNoColor turns colour off when set to anything
	// (https://no-color.org).
	EnvNoColor = "NO_COLOR"
	// EnvCPUProfile, when set, names a file for a CPU profile of the
	// command (a debugging aid: go tool pprof reads it); EnvHeapProfile
	// one for an allocation profile written when the command (or the
	// server) ends.
	EnvCPUProfile  = "THOUGHTBOX_CPU_PROFILE"
	EnvHeapProfile = "THOUGHTBOX_HEAP_PROFILE"
)

// A Setting is one row of the settings table: the environment variable,
// the flag that wins over it (with its command, if it is not global), the
// default as a user reads it, and what it does in one line. The README's
// settings table has the same rows.
type Setting struct {
	Name, Flag, Default, Meaning string
}

// Settings are every setting, in the README's order.
var Settings = []Setting{
	{EnvDataDir, "--data-dir", "~/.thoughtbox", "where ledgers and config.json live"},
	{EnvProject, "--project", DefaultProject, "which ledger: one Git repository per project"},
	{EnvStorage, "", "fs", "fs (the Git repository) or memory (nothing kept when the process ends)"},
	{EnvPartition, "", "monthly (from config.json)", "how session folders are grouped: monthly, weekly, daily, none"},
	{EnvAgentName, "", "thoughtbox-cli (CLI), the client's name (MCP)", "author of the thoughts written"},
	{EnvAgentID, "", "the client's version", "the agent's id in commits a connection makes"},
	{EnvTransport, "serve --transport", "http", "serve's transport, http or stdio"},
	{EnvHost, "serve --host", "127.0.0.1", "address to listen on"},
	{EnvPort, "serve --port", "1731", "port to listen on; 0 picks a free one"},
	{EnvHTTPMaxSessions, "serve --max-sessions", "1000", "MCP sessions open at once over HTTP"},
	{EnvAuthToken, "", "", "HTTP requests need Authorization: Bearer <token>"},
	{EnvAuthTokensFile, "", "", "a file of tokens, each with an identity and project scopes"},
	{EnvAllowedOrigins, "", "local origins", "more browser origins allowed to call the MCP server"},
	{EnvAutoCreateSession, "", "true", "false: a thought with no active session is refused"},
	{EnvReasoningSession, "serve --session", "", "every connection starts in this session"},
	{EnvExportDirs, "serve --export-dir", "", "folders besides DATA_DIR/exports that session export may write into"},
	{EnvDisableThoughts, "", "", "silences the server's one-line log of each thought"},
	{EnvMaxThoughtBytes, "", "1M", "the largest thought accepted, in bytes"},
	{EnvLockTimeout, "", "10s", "how long a writer waits for another process's lock"},
	{EnvHTTPReadTimeout, "", "30s", "receiving one request body"},
	{EnvHTTPIdleTimeout, "", "2m", "an idle keep-alive connection"},
	{EnvHTTPMaxConns, "", "512", "open HTTP connections; more wait"},
	{EnvRootsTimeout, "", "10s", "waiting for a client's answer to roots/list"},
	{EnvMaxOpenProjects, "", "16", "projects a server keeps open besides its own"},
	{EnvProjectIdle, "", "10m", "closes an unused open project"},
	{EnvEventsEnabled, "", "", "writes every event as a JSON line"},
	{EnvEventsDest, "", "stderr", "where event lines go: stderr or a file"},
	{EnvNotebookTimeout, "", "10s", "how long one notebook run may take"},
	{EnvRLMMaxIterations, "serve --rlm-max-iterations", "12", "turns the model gets in one rlm run"},
	{EnvRLMBlockTimeout, "serve --rlm-block-timeout", "5s", "computing time of one rlm code block"},
	{EnvRLMMaxOutput, "serve --rlm-max-output", "8K", "what one rlm code block may print"},
	{EnvRLMMemory, "serve --rlm-memory", "256M", "memory of the rlm sandbox process"},
	{EnvAutoPush, "", "", "a remote to push each session to when it closes"},
	{EnvAutoPushInterval, "", "", "also push open sessions that changed, at most this often"},
	{EnvAutoPull, "", "", "a remote serve pulls from in the background"},
	{EnvAutoPullInterval, "", "30s", "how often it pulls"},
	{EnvPushHookBudget, "", "2s", "the most time the pre-push hook adds to a git push"},
	{EnvGitToken, "", "", "the token for https:// remotes"},
	{EnvGitUser, "", "thoughtbox", "the user name sent with the token"},
	{EnvSSHKey, "", "the ssh agent", "a key file for ssh remotes"},
	{EnvSSHKeyPassphrase, "", "", "the key file's passphrase"},
	{EnvFileTransport, "", "git if installed", "local-path remotes through git or the built-in transport (builtin)"},
	{EnvObservatoryEnabled, "", "false", "start the Observatory with serve"},
	{EnvObservatoryPort, "observatory --port", "1729", "the Observatory's port"},
	{EnvObservatoryHTTPAPI, "observatory --http-api", "false", "serve the HTTP API under /api/"},
	{EnvObservatoryCORS, "", "own origin and loopback", "more browser origins allowed to use the socket and API"},
	{EnvObservatoryMaxConnections, "", "100", "open WebSocket connections"},
	{EnvObservatoryAbandonAfter, "", "24h", "an open session idle this long counts as abandoned"},
	{EnvObservatoryLiveWindow, "observatory --live-window", "5m", "a session written to within this long is listed as live"},
	{EnvNoColor, "--no-color", "colour on a terminal", "any value turns colour off"},
	{EnvCPUProfile, "", "", "write a CPU profile of the command to this file"},
	{EnvHeapProfile, "", "", "write a heap profile of the command to this file"},
}
