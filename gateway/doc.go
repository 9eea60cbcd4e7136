// Package gateway is the MCP server of Thoughtbox: the thoughtbox_gateway
// tool with its stage machine, the per-stage tools of progressive
// disclosure, the resources and resource templates, and the prompts. It is a
// thin layer over the ledger: every operation decodes its arguments
// strictly, calls the ledger, and reports domain failures as tool results
// with isError and a {code, message, details} body.
//
// One Gateway serves any number of MCP connections; each connection gets its
// own *mcp.Server (NewServer) and with it its own state: the stage (0 entry,
// 1 init complete, 2 cipher loaded, 3 domain active), the active session, the
// domain, the bound root and the navigation context. That state lives as long
// as the connection.
//
//	g := gateway.New(l, gateway.Options{ThoughtLog: os.Stderr})
//	err := g.ServeStdio(ctx, os.Stdin, os.Stdout)
//
// or, for Streamable HTTP at /mcp:
//
//	srv := &http.Server{Addr: "127.0.0.1:1731", Handler: g.HTTPHandler()}
//
// Operations are declared once, in the table built by newOperations (ops.go);
// the stage check and the stage advance happen in one place, dispatch.
package gateway
