package cli

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"text/tabwriter"

	"github.com/thoughtbox/thoughtbox/config"
	"github.com/thoughtbox/thoughtbox/project"
	"github.com/thoughtbox/thoughtbox/sharing"
)

// projectsCmd and infoCmd only report: they read what is on disk without
// opening a ledger, so they never create, lock or change anything, and
// they answer even while another process holds the ledger.

type projectsCmd struct{ pageFlags }

type projectInfo struct {
	Name     string `json:"name"`
	Sessions int    `json:"sessions"`
	Bytes    int64  `json:"bytes"`
	Path     string `json:"path"`
	Current  bool   `json:"current"`
}

func (c *projectsCmd) Run(a *app) error {
	var out []projectInfo
	names := config.Projects(a.cfg.DataDir)
	from, to := c.cut(len(names))
	defer c.more(a.env.Stderr, to-from, len(names), "projects")
	for _, name := range names[from:to] {
		cfg, err := a.cfg.ForProject(name)
		if err != nil {
			continue // Projects lists valid names only
		}
		repo := cfg.RepoPath()
		out = append(out, projectInfo{Name: name, Sessions: project.Inspect(cfg).Sessions, Bytes: diskUsage(repo), Path: repo, Current: name == a.cfg.Project})
	}
	if a.format == FormatJSON {
		if out == nil {
			out = []projectInfo{}
		}
		return writeJSON(a.env.Stdout, out)
	}
	if len(names) == 0 {
		fmt.Fprintf(a.env.Stderr, "no projects in %s yet; 'thoughtbox start <title>' starts one\n", a.cfg.DataDir)
		return nil
	}
	tw := tabwriter.NewWriter(a.env.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PROJECT\tSESSIONS\tSIZE")
	for _, p := range out {
		mark := ""
		if p.Current {
			mark = " *"
		}
		fmt.Fprintf(tw, "%s%s\t%d\t%s\n", p.Name, mark, p.Sessions, humanBytes(p.Bytes))
	}
	return tw.Flush()
}

type infoCmd struct{}

type infoOutput struct {
	Version    string           `json:"version"`
	DataDir    string           `json:"dataDir"`
	Project    string           `json:"project"`
	Repository string           `json:"repository"`
	Exists     bool             `json:"exists"`
	Storage    config.Storage   `json:"storage"`
	Partition  string           `json:"partition"`
	ConfigFile string           `json:"configFile"`
	Config     *config.File     `json:"config,omitempty"`
	Sessions   int              `json:"sessions"`
	Remotes    []sharing.Remote `json:"remotes"`
	Pending    pendingInfo      `json:"pending"`
	MaxThought int              `json:"maxThoughtBytes"`
}

type pendingInfo struct {
	Records int   `json:"records"`
	Bytes   int64 `json:"bytes"`
}

func (c *infoCmd) Run(a *app) error {
	repo := a.cfg.RepoPath()
	o := infoOutput{
		Version: versionLine(), DataDir: a.cfg.DataDir, Project: a.cfg.Project, Repository: repo,
		Storage: a.cfg.Storage, Partition: string(a.cfg.Partition), ConfigFile: filepath.Join(a.cfg.DataDir, config.FileName),
		MaxThought: a.cfg.MaxThoughtBytes, Remotes: []sharing.Remote{},
	}
	if f, err := config.ReadFile(o.ConfigFile); err == nil {
		o.Config = &f
	}
	if st := project.Inspect(a.cfg); st.Exists {
		o.Exists, o.Sessions = true, st.Sessions
		o.Pending.Records, o.Pending.Bytes = st.PendingRecords, st.PendingBytes
		if st.Remotes != nil {
			o.Remotes = st.Remotes
		}
	}
	if a.format == FormatJSON {
		return writeJSON(a.env.Stdout, o)
	}
	tw := tabwriter.NewWriter(a.env.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "version\t%s\n", o.Version)
	fmt.Fprintf(tw, "data directory\t%s\n", o.DataDir)
	cfgLine := o.ConfigFile
	if o.Config == nil {
		cfgLine += " (not written yet)"
	}
	fmt.Fprintf(tw, "config\t%s\n", cfgLine)
	fmt.Fprintf(tw, "project\t%s\n", o.Project)
	repoLine := o.Repository
	if !o.Exists {
		repoLine += " (does not exist yet)"
	}
	fmt.Fprintf(tw, "repository\t%s\n", repoLine)
	fmt.Fprintf(tw, "storage\t%s\n", o.Storage)
	fmt.Fprintf(tw, "partition\t%s\n", o.Partition)
	fmt.Fprintf(tw, "max thought\t%s\n", humanBytes(int64(o.MaxThought)))
	fmt.Fprintf(tw, "sessions\t%d\n", o.Sessions)
	if len(o.Remotes) == 0 {
		fmt.Fprintf(tw, "remotes\tnone\n")
	}
	for _, r := range o.Remotes {
		fmt.Fprintf(tw, "remote\t%s  %s\n", r.Name, r.URL)
	}
	fmt.Fprintf(tw, "pending in the log\t%d records, %s\n", o.Pending.Records, humanBytes(o.Pending.Bytes))
	return tw.Flush()
}

func diskUsage(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
