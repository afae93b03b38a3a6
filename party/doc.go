// Package party holds nothing itself: its two subpackages are the two sides
// of split learning. party/passive owns the features and the bottom model
// and never handles a label; party/active owns the labels, the top model,
// the protection and the loss. They talk only through package transport.
package party
