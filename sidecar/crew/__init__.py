"""A member's side of the crew: the crew tier is the lead's, asked over HTTP."""
