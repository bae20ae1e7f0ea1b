package parserest

// liveFeed is the LiveQuery change feed (livequery.go).
type liveFeed struct{}

func (f *liveFeed) close() {}
