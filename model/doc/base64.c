/*
 * model/doc/base64.c - standard base64 with padding, for bytes leaves: a
 * rendered `{"$base64": "..."}` and its parse back (model/doc/doc*.c).
 */
#include <stdint.h>
#include <string.h>

#include "model/model_int.h"

void base64_encode(const uint8_t *data, size_t len, struct strbuf *sb)
{
	static const char abc[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char quad[4];

	for (size_t i = 0; i < len; i += 3) {
		uint32_t v = (uint32_t)data[i] << 16;
		size_t n = len - i < 3 ? len - i : 3;

		if (n > 1)
			v |= (uint32_t)data[i + 1] << 8;
		if (n > 2)
			v |= data[i + 2];
		quad[0] = abc[v >> 18 & 63];
		quad[1] = abc[v >> 12 & 63];
		quad[2] = n > 1 ? abc[v >> 6 & 63] : '=';
		quad[3] = n > 2 ? abc[v & 63] : '=';
		strbuf_add(sb, quad, 4);
	}
}

/* Decodes standard base64 with padding into sb; false unless canonical. */
bool base64_decode(const char *s, size_t len, struct strbuf *sb)
{
	static const char abc[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	uint8_t out[3];

	strbuf_reset(sb);
	if (len % 4)
		return false;
	for (size_t i = 0; i < len; i += 4) {
		uint32_t v = 0;
		int pad = 0;

		for (int j = 0; j < 4; j++) {
			const char *hit = s[i + j] ? memchr(abc, s[i + j], 64) : NULL;

			if (s[i + j] == '=' && i + 4 == len && j >= 2 &&
			    (j == 3 || s[i + 3] == '=')) {
				pad++;
				v <<= 6;
				continue;
			}
			if (!hit || pad)
				return false;
			v = v << 6 | (uint32_t)(hit - abc);
		}
		out[0] = (uint8_t)(v >> 16);
		out[1] = (uint8_t)(v >> 8);
		out[2] = (uint8_t)v;
		/* Bits under the padding must be zero, so each text has one meaning. */
		if ((pad == 1 && out[2]) || (pad == 2 && (out[1] || out[2])))
			return false;
		strbuf_add(sb, out, (size_t)(3 - pad));
	}
	return !sb->failed;
}
