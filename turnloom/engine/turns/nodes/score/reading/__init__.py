"""What a player's line says, read without the model, for the `score` decision: the numbers it
spells (`numbers`), the spans it offers and what its words are (`values`), the names in it and
whose something is (`names`), its sentences, orders and corrections (`sentences`), which spans
a free-text argument may take (`strings`), what it quotes (`quotes`), the words it shares with
each tool (`words`), and which side of a flag or which value of an enum it says (`booleans`)."""
