"""Layer 5, inventory: what an entity has (wardrobe, people, symbols) and the spaces it lives in."""
