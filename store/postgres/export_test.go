package postgres

// SetBeforeConnect makes the change feed's listener call hook before each
// connection it opens (tests hold it down with it). Set it before Watch.
func SetBeforeConnect(s *Store, hook func()) { s.feed.beforeConnect = hook }

// ArePattern is arePattern: a $regex rendered as PostgreSQL's ARE.
var ArePattern = arePattern
