"""Selection: budgeted, stratified choice of documents from sidecar attributes."""
