package llm

import (
	"context"
	"errors"
	"strings"
)

const compactPrompt = `Summarise our conversation so far for your own later use; it will replace the conversation.
Keep every fact the tools returned (class names, counts, objectIds, names, dates, amounts), each question asked with the answer given, and any question still open.
Write plain text. Do not call tools.`

// Compact replaces the conversation with a summary the model writes (one
// extra model call, whose usage counts in the session's). It returns the
// summary and the usage of the call; with no conversation it does
// nothing. On an error the conversation is kept.
func (c *Client) Compact(ctx context.Context) (string, Usage, error) {
	if len(c.history) == 0 {
		return c.summary, Usage{}, nil
	}
	if err := c.loadTools(ctx); err != nil { // tool_use blocks need their tools declared
		return "", Usage{}, err
	}
	history := c.history
	if last := history[len(history)-1]; last.Role == RoleUser && last.Text != "" && len(last.Results) == 0 {
		history = history[:len(history)-1] // an unanswered question: keep it out
	}
	saved := c.history
	c.history = history
	resp, err := c.turn(ctx, Message{Role: RoleUser, Text: compactPrompt})
	c.history = saved
	if err != nil {
		return "", Usage{}, err
	}
	u := usageOf(c.opts.Pricing, c.opts.Provider.Model(), resp.Tokens)
	c.total = c.total.Add(u)
	summary := strings.TrimSpace(resp.Text)
	if summary == "" {
		return "", u, errors.New("the model returned an empty summary; the conversation is kept")
	}
	c.summary = summary
	c.history = nil
	c.context = int64(len(c.system()) / 4) // about four bytes a token until the next turn counts
	c.emit(Event{Kind: EventCompacted, Text: summary, Usage: u})
	return summary, u, nil
}
