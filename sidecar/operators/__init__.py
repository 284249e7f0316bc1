"""The operator model: how one person likes to work, kept in the crew tier."""
