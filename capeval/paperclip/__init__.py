"""The Paperclip capability conformance suite: derivative, policy, catalog, mock control plane, fake agent."""
