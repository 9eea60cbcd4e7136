package config

// Settings of a server's pool of open projects (project/pool).
const (
	// EnvMaxOpenProjects caps the projects kept open besides the
	// server's own; EnvProjectIdle closes one unused this long.
	EnvMaxOpenProjects = "THOUGHTBOX_MAX_OPEN_PROJECTS"
	EnvProjectIdle     = "THOUGHTBOX_PROJECT_IDLE_TIMEOUT"
)
