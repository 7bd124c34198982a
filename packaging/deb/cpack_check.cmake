# Read by cpack before it packages (CPACK_PROJECT_CONFIG_FILE): a .deb
# installs under /usr, and a build configured for another prefix installs
# files that name that prefix (the systemd units' ExecStart=/usr/local/bin/...
# would point at nothing). Say how to fix it rather than ship such a package.
if(CPACK_GENERATOR STREQUAL "DEB" AND NOT CPACK_TRK_BUILD_PREFIX STREQUAL "/usr")
  message(FATAL_ERROR
          "this build is configured with CMAKE_INSTALL_PREFIX=${CPACK_TRK_BUILD_PREFIX}; the "
          "Debian package installs under /usr: reconfigure with -DCMAKE_INSTALL_PREFIX=/usr "
          "(./setup.sh package does)")
endif()
