// Package geo holds the small geometry the stores need.
package geo

// InPolygon reports whether (lat, lng) lies inside the polygon of [lat, lng]
// points (even-odd rule; points on an edge may fall either way).
func InPolygon(lat, lng float64, pts [][2]float64) bool {
	inside := false
	for i, j := 0, len(pts)-1; i < len(pts); j, i = i, i+1 {
		yi, xi := pts[i][0], pts[i][1]
		yj, xj := pts[j][0], pts[j][1]
		if (yi > lat) != (yj > lat) && lng < (xj-xi)*(lat-yi)/(yj-yi)+xi {
			inside = !inside
		}
	}
	return inside
}
