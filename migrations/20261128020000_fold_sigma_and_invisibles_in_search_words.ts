/**
 * Search words write the Greek final sigma ς as σ (PLAIN_LETTERS in
 * src/leads/lead-search-terms.ts), so `ΟΔΥΣ`, which lower-cases to `οδυς`, finds Οδυσσέας; and
 * drop the characters that show nothing within a word (INVISIBLE_IN_WORD), so `maximilian` finds
 * a Maxi\u00admilian pasted with a soft hyphen. The words of existing leads are written again by
 * 20261128040000_keep_lead_words_on_leads, with the service's own tokenizer: that code writes
 * columns this migration's tables do not have yet.
 */
export async function up(): Promise<void> {}

/** The words stay folded: a build that does not fold finds them again after its own `leads maintenance reindex`. */
export async function down(): Promise<void> {}
