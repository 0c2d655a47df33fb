package engine

// maxLevel bounds tree height: a 4 KiB-node tree of height 8 holds more
// items than any device has blocks, so a deeper node is corruption, and
// every loop over levels is bounded by it.
const maxLevel = 8
