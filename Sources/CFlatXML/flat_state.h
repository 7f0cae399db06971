// SPDX-License-Identifier: Apache-2.0
// The record keeping both flat_sax.c and flat_canonical.c do per field: name ids, duplicate
// detection, the value buffer. `static inline` so each translation unit's hot loop inlines them.
#ifndef WXPAY_CFLATXML_STATE_H
#define WXPAY_CFLATXML_STATE_H
// libxml2's headers pull in the system ICU headers when LIBXML_ICU_ENABLED is set, and those clash
// with the ICU bundled in Foundation; input is UTF-8 only, so switch it off first (as the CLibXML2
// shim does).
#include <libxml/xmlversion.h>
#undef LIBXML_ICU_ENABLED
#include <libxml/parser.h>
#include <libxml/tree.h>
#include "include/flat_xml.h"
#include <stdlib.h>
#include <string.h>

static inline size_t wxpay_flat_hash(const void *pointer, size_t capacity) {
    uint64_t x = (uint64_t)(uintptr_t)pointer;
    x ^= x >> 29;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 32;
    return (size_t)x & (capacity - 1);
}

/// The id of an interned name, assigning the next one to a name not seen before; -1 when out of memory.
static inline int64_t wxpay_flat_name_id(wxpay_flat_state *state, const xmlChar *name) {
    if ((state->ids_count + 1) * 2 > state->ids_capacity) {
        size_t capacity = state->ids_capacity ? state->ids_capacity * 2 : 128;
        const xmlChar **keys = calloc(capacity, sizeof *keys);
        uint32_t *values = calloc(capacity, sizeof *values);
        // At most half the slots hold ids, so `capacity / 2` names always fit.
        const xmlChar **names = realloc(state->id_names, capacity / 2 * sizeof *names);
        if (names) state->id_names = names;
        if (!keys || !values || !names) { free(keys); free(values); return -1; }
        for (size_t i = 0; i < state->ids_capacity; i++) {
            if (!state->ids_keys[i]) continue;
            size_t slot = wxpay_flat_hash(state->ids_keys[i], capacity);
            while (keys[slot]) slot = (slot + 1) & (capacity - 1);
            keys[slot] = state->ids_keys[i];
            values[slot] = state->ids_values[i];
        }
        free(state->ids_keys);
        free(state->ids_values);
        state->ids_keys = keys;
        state->ids_values = values;
        state->ids_capacity = capacity;
    }
    size_t slot = wxpay_flat_hash(name, state->ids_capacity);
    while (state->ids_keys[slot]) {
        if (state->ids_keys[slot] == name) return state->ids_values[slot];
        slot = (slot + 1) & (state->ids_capacity - 1);
    }
    state->ids_keys[slot] = name;
    state->ids_values[slot] = (uint32_t)state->ids_count;
    state->id_names[state->ids_count] = name;
    return (int64_t)state->ids_count++;
}

/// Whether the name with this id already named a field of this document; records it otherwise.
/// -1: out of memory.
static inline int wxpay_flat_seen_before(wxpay_flat_state *state, uint32_t id) {
    if (id >= state->last_document_capacity) {
        size_t capacity = state->last_document_capacity ? state->last_document_capacity : 128;
        while (capacity <= id) capacity *= 2;
        uint32_t *last = realloc(state->last_document, capacity * sizeof *last);
        if (!last) return -1;
        memset(last + state->last_document_capacity, 0, (capacity - state->last_document_capacity) * sizeof *last);
        state->last_document = last;
        state->last_document_capacity = capacity;
    }
    if (state->last_document[id] == state->document) return 1;
    state->last_document[id] = state->document;
    return 0;
}

static inline int wxpay_flat_reserve_values(wxpay_flat_state *state, size_t extra) {
    size_t needed = state->values_length + extra;
    if (needed <= state->values_capacity) return 1;
    size_t capacity = state->values_capacity ? state->values_capacity : 2048;
    while (capacity < needed) capacity *= 2;
    uint8_t *values = realloc(state->values, capacity);
    if (!values) return 0;
    state->values = values;
    state->values_capacity = capacity;
    return 1;
}

/// Records a field whose value runs from `value_offset` to the end of `values`; 0 when out of memory.
static inline int wxpay_flat_add_field(wxpay_flat_state *state, const xmlChar *name, uint32_t id, size_t value_offset) {
    if (state->field_count == state->field_capacity) {
        size_t capacity = state->field_capacity ? state->field_capacity * 2 : 64;
        wxpay_flat_field *fields = realloc(state->fields, capacity * sizeof *fields);
        if (!fields) return 0;
        state->fields = fields;
        state->field_capacity = capacity;
    }
    wxpay_flat_field *field = &state->fields[state->field_count++];
    field->name = name;
    field->name_id = id;
    field->value_offset = value_offset;
    field->value_length = (uint32_t)(state->values_length - value_offset);
    return 1;
}
#endif
