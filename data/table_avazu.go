package data

// FormatAvazu is Avazu's click-through table: CSV with a header, "click"
// the label, "id" the example ID (an unsigned 64-bit integer), every
// other column categorical.
const FormatAvazu = "avazu"

func init() {
	RegisterTableFormat(TableFormat{Name: FormatAvazu,
		Help:      "Avazu's click-through table: CSV with a header, click the label, id the example ID, every other column categorical",
		Delimiter: func([]byte) byte { return ',' },
		LabelCol:  "click",
		IDCol:     "id",
		UintIDs:   true,
	})
}
