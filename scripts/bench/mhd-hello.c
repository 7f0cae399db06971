// SPDX-License-Identifier: Apache-2.0
// The C reference for scripts/bench-http-server: the smallest libmicrohttpd server that does what
// the Swift server's fast path does, with the same threading and limits (epoll polling threads in a
// pool of 2, suspend/resume + ITC enabled, the same connection limit, timeout, memory limit and
// strictness), answering GET /json with the same body and Content-Type, queued in the second
// access-handler call so keep-alive holds, from a freshly copied buffer per request.
//
// Build: gcc -O2 -o mhd-hello scripts/bench/mhd-hello.c -lmicrohttpd
// Run:   ./mhd-hello [port] [threads]   (prints "listening 127.0.0.1:<port>"; stops on SIGINT/SIGTERM)
#include <arpa/inet.h>
#include <microhttpd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char BODY[] = "{\"return_code\":\"SUCCESS\",\"trade_state\":\"NOTPAY\"}";
static int head_seen;

static enum MHD_Result answer(void *cls, struct MHD_Connection *connection, const char *url, const char *method,
                              const char *version, const char *upload_data, size_t *upload_data_size,
                              void **context) {
    (void)cls; (void)version; (void)upload_data;
    if (*context == NULL) {
        *context = &head_seen;
        return MHD_YES;
    }
    if (*upload_data_size != 0) {
        *upload_data_size = 0;
        return MHD_YES;
    }
    unsigned int status = 200;
    const char *body = BODY;
    if (strcmp(method, "GET") != 0 || strcmp(url, "/json") != 0) {
        status = 404;
        body = "not found\n";
    }
    struct MHD_Response *response = MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
    if (response == NULL) return MHD_NO;
    MHD_add_response_header(response, "Content-Type", status == 200 ? "application/json" : "text/plain");
    enum MHD_Result result = MHD_queue_response(connection, status, response);
    MHD_destroy_response(response);
    return result;
}

int main(int argc, char **argv) {
    unsigned short port = argc > 1 ? (unsigned short)atoi(argv[1]) : 0;
    unsigned int threads = argc > 2 ? (unsigned int)atoi(argv[2]) : 2;
    struct sockaddr_in address;
    memset(&address, 0, sizeof address);
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);

    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    // Blocked before the polling threads start, so they inherit the mask and sigwait gets them.
    pthread_sigmask(SIG_BLOCK, &signals, NULL);

    struct MHD_Daemon *daemon = MHD_start_daemon(
        MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ITC, port, NULL, NULL, answer, NULL,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&address,
        MHD_OPTION_THREAD_POOL_SIZE, threads,
        MHD_OPTION_CONNECTION_LIMIT, 4096u,
        MHD_OPTION_CONNECTION_TIMEOUT, 15u,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(32 * 1024),
        MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024u,
        MHD_OPTION_STRICT_FOR_CLIENT, 1,
        MHD_OPTION_END);
    if (daemon == NULL) {
        fprintf(stderr, "mhd-hello: MHD_start_daemon failed\n");
        return 1;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    printf("listening 127.0.0.1:%u\n", info != NULL ? (unsigned)info->port : 0u);
    fflush(stdout);

    int received;
    sigwait(&signals, &received);
    MHD_stop_daemon(daemon);
    return 0;
}
