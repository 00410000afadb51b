# style.gp: the one style of every ema figure, loaded by each script from
# its own folder: a fixed colour, line style and point per policy (the
# Okabe-Ito palette, told apart with the common colour-vision
# deficiencies; its yellow is left out, unreadable on white), the fonts
# and sizes. Edit it here and `sh render.sh` redraws every figure alike.

# The shipped policies, in this order, and their look. ema, the policy of
# interest, is the solid blue line; static, the baseline, black dashes.
style_policies = "static ideal host_swap remote_direct ema"
array style_colour[5] = ["#000000", "#009E73", "#E69F00", "#CC79A7", "#0072B2"]
array style_dash[5] = [2, 3, 4, 5, 1]
array style_point[5] = [4, 8, 10, 12, 7]
array style_width[5] = [2.0, 2.0, 2.0, 2.0, 2.6]
# Other policies, by their place in the figure's list of policies.
array style_extra[3] = ["#D55E00", "#56B4E9", "#7F7F7F"]

style_find(l, w, i) = i > words(l) ? 0 : (word(l, i) eq w ? i : style_find(l, w, i + 1))
# policy NAME, its place P among the figure's policies
pcolour(name, p) = style_find(style_policies, name, 1) > 0 ? \
	style_colour[style_find(style_policies, name, 1)] : style_extra[(p - 1) % 3 + 1]
pdash(name, p) = style_find(style_policies, name, 1) > 0 ? \
	style_dash[style_find(style_policies, name, 1)] : ((p - 1) % 3 + 6)
ppoint(name, p) = style_find(style_policies, name, 1) > 0 ? \
	style_point[style_find(style_policies, name, 1)] : ((p - 1) % 3 + 5)
pwidth(name, p) = style_find(style_policies, name, 1) > 0 ? \
	style_width[style_find(style_policies, name, 1)] : 2.0

style_font = "Sans,10"
style_grid = "#e0e0e0"

# Titles: a figure's title is wrapped at blanks to the width of its canvas
# (wcm cm: about 0.16 cm a character at style_font, in the PNG the wider),
# so that no title is cut at the edges, and each line below the first
# takes style_line_cm more at the top. style_wrap(s, n): s with a newline
# before any word that would pass n characters (a word longer than n is
# cut); style_lines(s): how many lines s has.
style_char_cm = 0.16
style_line_cm = 0.32
style_chars(wcm) = int(wcm / style_char_cm) < 150 ? int(wcm / style_char_cm) : 150
style_nl(s) = strstrt(s, "\n")
style_blank(s, i) = i < 2 ? 0 : (s[i:i] eq " " ? i : style_blank(s, i - 1))
style_cut(s, n) = style_blank(s, n + 1)
style_wrap1(s, n) = strlen(s) <= n ? s : (style_cut(s, n) > 0 ? \
	s[1:style_cut(s, n) - 1] . "\n" . style_wrap1(s[style_cut(s, n) + 1:], n) : \
	s[1:n] . "\n" . style_wrap1(s[n + 1:], n))
style_wrap(s, n) = style_nl(s) > 0 ? \
	style_wrap1(s[1:style_nl(s) - 1], n) . "\n" . style_wrap(s[style_nl(s) + 1:], n) : \
	style_wrap1(s, n)
style_lines(s) = style_nl(s) > 0 ? 1 + style_lines(s[style_nl(s) + 1:]) : 1
