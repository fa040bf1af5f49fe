"""Knowledge inputs: upstream sources, symbol index, Platform Map, Feature Diff."""
