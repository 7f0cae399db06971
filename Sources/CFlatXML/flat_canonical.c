// SPDX-License-Identifier: Apache-2.0
// The canonical-form scanner of the strict flat-XML codec (see wxpay_flat_parse_canonical in
// include/flat_xml.h for the shape it accepts and why it can change no verdict).
//
// It accepts a document only when it is entirely in WeChat's shape (ASCII names of letters,
// digits and `_`, no carriage return, no empty-element tags, no XML declaration, no duplicate or
// over-long field) and then records exactly the fields the libxml2 path would record. Anything
// else goes to libxml2 and the SAX callbacks of flat_sax.c, which decide and name the error.
#include "flat_state.h"

static inline int wxpay_canonical_is_name_start(uint8_t byte) {
    uint8_t lower = byte | 0x20;
    return (lower >= 'a' && lower <= 'z') || byte == '_';
}

static inline int wxpay_canonical_is_name_byte(uint8_t byte) {
    return wxpay_canonical_is_name_start(byte) || (byte >= '0' && byte <= '9');
}

/// Whitespace between elements. No carriage return: the caller sends documents holding one to
/// libxml2, which normalises line ends.
static inline int wxpay_canonical_is_space(uint8_t byte) {
    return byte == ' ' || byte == '\t' || byte == '\n';
}

/// Whether `bytes` at `p` (before `end`) is `</` + `name` + `>`.
static inline int wxpay_canonical_end_tag(const uint8_t *p, const uint8_t *end, const uint8_t *name, size_t name_length) {
    return (size_t)(end - p) >= name_length + 3 && p[0] == '<' && p[1] == '/' &&
           memcmp(p + 2, name, name_length) == 0 && p[2 + name_length] == '>';
}

int wxpay_flat_parse_canonical(wxpay_flat_state *state, const uint8_t *bytes, size_t length) {
    const uint8_t *p = bytes, *end = bytes + length;
    const uint8_t *root = (const uint8_t *)state->root;
    size_t root_length = strlen(state->root);
    if (length < root_length + 2 || p[0] != '<' || memcmp(p + 1, root, root_length) != 0 || p[1 + root_length] != '>') return 0;
    p += root_length + 2;
    for (;;) {
        while (p < end && wxpay_canonical_is_space(*p)) p++;
        if (end - p < 2 || p[0] != '<') return 0;
        if (p[1] == '/') break;

        const uint8_t *name = ++p;
        if (!wxpay_canonical_is_name_start(*p)) return 0;
        while (p < end && wxpay_canonical_is_name_byte(*p)) p++;
        size_t name_length = (size_t)(p - name);
        if (p == end || *p != '>' || name_length > WXPAY_CANONICAL_MAXIMUM_NAME) return 0;
        p++;

        const uint8_t *value;
        size_t value_length;
        if (end - p >= 9 && memcmp(p, "<![CDATA[", 9) == 0) {
            // The section ends at the first "]]>"; everything before it is the value, verbatim.
            value = p + 9;
            const uint8_t *bracket = value;
            for (;;) {
                bracket = memchr(bracket, ']', (size_t)(end - bracket));
                if (!bracket || end - bracket < 3) return 0;
                if (bracket[1] == ']' && bracket[2] == '>') break;
                bracket++;
            }
            value_length = (size_t)(bracket - value);
            p = bracket + 3;
        } else {
            // Plain text, taken verbatim only without references (`&`) and without `]`, which
            // could start the `]]>` text may not hold; either sends the document to libxml2.
            value = p;
            while (p < end && *p != '<' && *p != '&' && *p != ']') p++;
            value_length = (size_t)(p - value);
        }
        if (!wxpay_canonical_end_tag(p, end, name, name_length)) return 0;
        p += name_length + 3;
        if (value_length > state->maximum_value_length) return 0;

        // The field, with its name interned in the parser context's dictionary exactly as
        // libxml2 would intern it, so both paths share the name ids.
        size_t position = state->field_count;
        const xmlChar *interned = NULL;
        int64_t id;
        if (position < WXPAY_FLAT_RECENT_POSITIONS && state->recent_names[position] &&
            strncmp((const char *)state->recent_names[position], (const char *)name, name_length) == 0 &&
            state->recent_names[position][name_length] == 0) {
            interned = state->recent_names[position];
            id = state->recent_ids[position];
        } else {
            interned = xmlDictLookup(((xmlParserCtxtPtr)state->context)->dict, name, (int)name_length);
            if (!interned) return 0;
            id = wxpay_flat_name_id(state, interned);
            if (id < 0) return 0;
            if (position < WXPAY_FLAT_RECENT_POSITIONS) {
                state->recent_names[position] = interned;
                state->recent_ids[position] = (uint32_t)id;
            }
        }
        if (wxpay_flat_seen_before(state, (uint32_t)id) != 0) return 0;
        if (!wxpay_flat_reserve_values(state, value_length)) return 0;
        size_t offset = state->values_length;
        if (value_length) memcpy(state->values + offset, value, value_length);
        state->values_length += value_length;
        if (!wxpay_flat_add_field(state, interned, (uint32_t)id, offset)) return 0;
    }
    if (!wxpay_canonical_end_tag(p, end, root, root_length)) return 0;
    p += root_length + 3;
    while (p < end && wxpay_canonical_is_space(*p)) p++;
    if (p != end) return 0;
    state->root_seen = 1;
    return 1;
}
