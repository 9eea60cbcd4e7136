package gitstore

// The standalone layout's names, for tests that look at a standalone
// store's refs.
const (
	refPrefix      = "refs/heads/sessions/"
	knowledgeRef   = "refs/heads/knowledge"
	notebookPrefix = "refs/heads/notebooks/"
)

func mainRef(id string) string           { return Standalone.mainRef(id) }
func branchRef(id, branch string) string { return Standalone.branchRef(id, branch) }
func chainRef(id, branch string) string  { return Standalone.chainRef(id, branch) }
func notebookRef(id string) string       { return Standalone.notebookRef(id) }
func sessionOfRef(ref string) string     { return Standalone.sessionOfRef(ref) }
func notebookOfRef(ref string) string    { return Standalone.notebookOfRef(ref) }
