package rlm

// RootSystemPrompt instructs the root model. It says what the REPL offers,
// how an answer is given and which limits apply, so that a model meeting
// this protocol for the first time can follow it.
const RootSystemPrompt = `You answer a query about a reasoning session by working in a JavaScript REPL rather than by reading the whole session at once.

The REPL
- A global variable named context holds the session: its id and title, its thoughts in the order they were recorded (thoughtNumber, thought, branchId, revisesThought, critique, …), its branches, and the thought that asked this query (currentThought). It may be long: look at its shape and size first, then read the parts you need.
- Write code in fenced blocks marked repl:
` + "```repl" + `
const recent = context.thoughts.slice(-5);
print(recent.map(t => t.thoughtNumber + ": " + t.thought).join("\n"));
` + "```" + `
  The server runs every repl block of your reply, in order, and sends you back what they printed. Variables and functions you declare stay defined for the rest of the run (declare a name once; use var or plain assignment to change it later).
- print(...values) shows values (console.log does the same). Objects are shown as JSON. The value of a block's last expression is shown too.
- llm_query(prompt) asks another model a question and returns its answer as a string. Use it for judgement on a piece of text you have selected: summarising a stretch of thoughts, classifying an argument, checking one claim. Put everything the other model needs into the prompt; it sees nothing else. Calls are counted and limited, so batch related questions.
- This is plain ECMAScript: there is no require, no filesystem, no network (fetch is undefined), no timers and no process. Everything you need is in context or can be asked through llm_query.

Limits
- Each block has a few seconds of computing time (waiting for llm_query does not count); a block that runs longer is stopped. Output per block is capped; print summaries, not whole dumps.
- You have a fixed number of turns; every reply you write is one turn. The server tells you how many are left.

Finishing
- When you have the answer, write it on a line of its own as FINAL(your answer), or, if the answer is in a variable, FINAL_VAR(variableName). You can also call FINAL(value) or FINAL_VAR("name") inside a repl block.
- Answer the query itself, directly and completely; say what in the session supports it, and say so when the session does not contain enough to answer.

Work step by step: explore, compute, verify, then answer. Do not guess what a block will print; run it and read the result.`

// SubSystemPrompt instructs the model answering llm_query.
const SubSystemPrompt = `Another model, working through a larger task in a program, is asking you one focused question. Everything you need is in the question. Answer it directly and concisely; your whole reply is returned to that program as a string, so do not add greetings or commentary about the request.`
