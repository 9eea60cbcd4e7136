package cli

import (
	"fmt"
	"os"

	"github.com/thoughtbox/thoughtbox/config"
	"github.com/thoughtbox/thoughtbox/gateway"
)

// readTokensFile reads THOUGHTBOX_AUTH_TOKENS_FILE, if set (nil if not):
// the MCP server and the Observatory check the same tokens.
func readTokensFile(cfg *config.Config) (*gateway.Tokens, error) {
	path := cfg.Getenv(config.EnvAuthTokensFile)
	if path == "" {
		return nil, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, &config.SettingError{Name: config.EnvAuthTokensFile, Value: path, Reason: err.Error()}
	}
	defer f.Close()
	tokens, err := gateway.ParseTokens(f, path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", config.EnvAuthTokensFile, err)
	}
	return tokens, nil
}
