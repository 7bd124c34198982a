/* --ssl-tracked: the fused world as the RoboCup Small Size League's tracked
 * format, one TrackerWrapperPacket (protocol/ssl_packet.h) per world
 * message in one UDP datagram, so team software that reads a league tracker
 * (the auto-referees' format) reads trackd-fuse.
 *
 * Robots: the fused markers whose pattern is a team's (--ssl-team
 * PATTERN:yellow|blue; by default a pattern named yellow or blue is that
 * team's, as the league's presets in examples/ name them), with an id >= 0
 * and a heading: the team, the marker's id, the
 * position and velocity in m and m/s, the orientation in radians in
 * [-pi, pi]. Balls: the fused objects of the ball's name (default "ball"),
 * at height 0. Everything as the world message has it (moved on with
 * --predict send; the packet's timestamp is then the moment moved to).
 * Nothing is sent while the world unit is not mm, cm or m (logged once).
 *
 * Lifecycle: open / send ... / close; one thread. */
#ifndef TRK_FUSE_SSL_TRACKED_H
#define TRK_FUSE_SSL_TRACKED_H

#include "fuse.h"

/* The league's port for tracked packets (multicast group 224.5.23.2). */
#define TRK_FUSE_SSL_TRACKED_PORT 10010

struct trk_fuse_ssl;

/* [udp://]HOST:PORT ([V6]:PORT; a name resolves to its IPv4 address first)
 * into a socket; ball: the balls' object name. 0; TRK_EINVAL for a
 * malformed address (*why says what is wrong); -ENOENT when HOST does not
 * resolve; TRK_ENOMEM; another -errno when no socket opens. */
int trk_fuse_ssl_open(const char *url, const char *ball, struct trk_fuse_ssl **out,
                      const char **why);
/* Most --ssl-team mappings. */
#define TRK_FUSE_SSL_TEAMS 16

/* PATTERN:yellow or PATTERN:blue: that pattern's markers are that team's
 * robots (a later one for the same pattern wins). 0; TRK_EINVAL (*why
 * says why) for a malformed one or more than TRK_FUSE_SSL_TEAMS. */
int trk_fuse_ssl_team(struct trk_fuse_ssl *s, const char *spec, const char **why);
/* Sends the last world message of f (trk_fuse_last). Never blocks: a
 * datagram the socket cannot take now is lost and counted. */
void trk_fuse_ssl_send(struct trk_fuse_ssl *s, const struct trk_fuse *f);
/* Logs what was sent and frees; safe on NULL, sets *s NULL. */
void trk_fuse_ssl_close(struct trk_fuse_ssl **s);

#endif
