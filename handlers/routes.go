package handlers

// Route is one entry of the route table.
type Route struct {
	Method string
	Path   string
	Guard  Guard
	h      handlerFunc
}

// table lists every route, its method and its guard, on one screen. A route
// added here is picked up by the guard-matrix test automatically.
func (s *Server) table() []Route {
	return []Route{
		// Static frontend and well-known documents.
		{"GET", "/", None, s.static("index.html")},
		{"GET", "/index.html", None, s.static("index.html")},
		{"GET", "/css/:filename", None, s.staticDir("css")},
		{"GET", "/js/:filename", None, s.staticDir("js")},
		{"GET", "/images/:filename", None, s.staticDir("images")},
		{"GET", "/webfonts/:filename", None, s.staticDir("webfonts")},
		{"GET", "/.well-known/jwks.json", None, s.jwks},

		// Authentication and users.
		{"POST", "/api/v1/login", DBOnly, s.login},
		{"POST", "/api/v1/auth/refresh", DBOnly, s.refresh},
		{"POST", "/api/v1/register", Admin, s.register},
		{"POST", "/api/v1/change-password", Auth, s.changePassword},
		{"GET", "/api/v1/users", Admin, s.listUsers},
		{"GET", "/api/v1/users/:userId", Admin, s.getUser},
		{"DELETE", "/api/v1/users/:userId", Admin, s.deleteUser},
		{"PATCH", "/api/v1/users/:userId", Admin, s.updateUser},

		// Settings, features, logs, version, status.
		{"GET", "/api/v1/settings", Admin, s.getSettings},
		{"PATCH", "/api/v1/settings", Admin, s.patchSettings},
		{"GET", "/api/v1/features", Auth, s.features},
		{"GET", "/api/v1/logs", Auth, s.logs},
		{"GET", "/api/v1/version", None, s.version},
		{"GET", "/api/v1/status/mqtt", Auth, s.statusMQTT},

		// Alerting (issue 7): events, integration alerts, status dashboard
		// and probes (events.go, integration_alerts.go, status.go).
		{"GET", "/api/v1/events", Auth, s.events},
		{"GET", "/api/v1/events/export", Admin, s.eventsExport},
		{"GET", "/api/v1/integration/alerts", Integration, s.integrationAlerts},
		{"GET", "/api/v1/status/alertsys", Auth, s.statusAlertsys},
		{"GET", "/api/v1/status/dashboard", Auth, s.statusDashboard},
		{"POST", "/api/v1/status/recheck", Admin, s.statusRecheck},

		// Push notifications (issue 8): companion-app QR (push.go).
		{"POST", "/api/v1/companion/qr", Admin, s.companionQR},

		// Asset registry (issue 4): locations, beacons, gateways, devices,
		// replace/merge/remint, import, deploy, monitoring discovery lists.
		{"GET", "/api/v1/locations", Auth, s.listLocations},
		{"POST", "/api/v1/locations", Admin, s.saveLocation},
		{"GET", "/api/v1/beacons", Auth, s.listBeacons},
		{"POST", "/api/v1/beacons", Admin, s.createBeacon},
		{"GET", "/api/v1/beacons/:limit", Admin, s.latestBeacons},
		{"GET", "/api/v1/beacon/:id", Auth, s.getBeacon},
		{"POST", "/api/v1/beacon/:id", Admin, s.updateBeacon},
		{"DELETE", "/api/v1/beacon/:id", Admin, s.deleteBeacon},
		{"GET", "/api/v1/beacon/:id/info", Admin, s.beaconInfo},
		{"GET", "/api/v1/beacon/:id/assignments", Admin, s.beaconAssignments},
		{"GET", "/api/v1/beacon/:id/intervals", Auth, s.beaconIntervals},
		{"POST", "/api/v1/beacon/:id/replace-device", Admin, s.replaceBeaconDevice},
		{"POST", "/api/v1/beacon/:id/replace-device/plan", Admin, s.planBeaconReplace},
		{"POST", "/api/v1/beacon/:id/merge/plan", Admin, s.planMerge},
		{"POST", "/api/v1/beacon/:id/merge", Admin, s.merge},
		{"GET", "/api/v1/assets/:asset_uid", Admin, s.getAsset},
		{"GET", "/api/v1/assets/:asset_uid/info", Admin, s.assetInfo},
		{"POST", "/api/v1/assets/replace-device/batch", Admin, s.replaceBatch},
		{"GET", "/api/v1/assets/remint/plan", Admin, s.remintPlan},
		{"POST", "/api/v1/assets/remint/apply", Admin, s.remintApply},
		{"GET", "/api/v1/devices", Admin, s.listDevices},
		{"POST", "/api/v1/device/:mac", Admin, s.updateDevice},
		{"GET", "/api/v1/gateways", Auth, s.listGateways},
		{"POST", "/api/v1/gateways", Admin, s.createGateway},
		{"GET", "/api/v1/gateway/:id", Auth, s.getGateway},
		{"POST", "/api/v1/gateway/:id", Admin, s.updateGateway},
		{"DELETE", "/api/v1/gateway/:id", Admin, s.deleteGateway},
		{"POST", "/api/v1/gateway/:id/replace-device", Admin, s.replaceGatewayDevice},
		{"GET", "/api/v1/import/beacons", Admin, s.importBeacons},
		{"GET", "/api/v1/import/gateways", Admin, s.importGateways},
		{"POST", "/api/v1/deploy", None, s.deploy},
		{"GET", "/lld/beacons", None, s.lldBeacons},
		{"GET", "/lld/gateways", None, s.lldGateways},

		// Sensors (issue 6): history, device list, range alerts
		// (sensors.go), and the chart datasource for an external dashboard
		// tool, guarded in its handler by the loopback-or-JWT rule
		// (chartsource.go).
		{"GET", "/api/v1/sensors/history", Auth, s.sensorHistory},
		{"GET", "/api/v1/sensors/devices", Auth, s.sensorDevices},
		{"GET", "/api/v1/sensors/alerts", Admin, s.sensorAlerts},
		{"GET", "/chartsource", None, s.chartGuard(s.chartHealth)},
		{"GET", "/chartsource/", None, s.chartGuard(s.chartHealth)},
		{"POST", "/chartsource/search", None, s.chartGuard(s.chartSearch)},
		{"POST", "/chartsource/metrics", None, s.chartGuard(s.chartSearch)},
		{"POST", "/chartsource/query", None, s.chartGuard(s.chartQuery)},

		// E-ink displays (issue 9: eink.go, einklayouts.go). The device poll
		// is outside /api/v1, unauthenticated, and answers device JSON in
		// Windows-1250, never the envelope.
		{"GET", "/eink/display", None, s.einkPoll},
		{"POST", "/eink/display", None, s.einkPoll},
		{"GET", "/eink/display/", None, s.einkPoll},
		{"POST", "/eink/display/", None, s.einkPoll},
		{"GET", "/api/v1/eink/displays", Admin, s.listEInk},
		{"POST", "/api/v1/eink/display/:id", Admin, s.updateEInk},
		{"DELETE", "/api/v1/eink/display/:id", Admin, s.deleteEInk},
		{"POST", "/api/v1/eink/display/:id/state", Admin, s.setEInkState},
		{"POST", "/api/v1/eink/display/:id/replace-device", Admin, s.replaceEInkDevice},
		{"POST", "/api/v1/eink/display/:id/apply-template", Admin, s.applyEInkTemplate},
		{"GET", "/api/v1/eink/sensors", Admin, s.einkSensors},
		{"GET", "/api/v1/eink/layout-templates", Admin, s.listEInkTemplates},
		{"POST", "/api/v1/eink/layout-templates", Admin, s.createEInkTemplate},
		{"POST", "/api/v1/eink/layout-template/:id", Admin, s.updateEInkTemplate},
		{"DELETE", "/api/v1/eink/layout-template/:id", Admin, s.deleteEInkTemplate},

		// Navigation (issue 10: nav.go, navedit.go, navtokens.go).
		{"GET", "/api/v1/floors", Auth, s.listFloors},
		{"POST", "/api/v1/floors", Admin, s.saveFloor},
		{"GET", "/api/v1/floor/:id", Auth, s.getFloor},
		{"POST", "/api/v1/floor/:id", Admin, s.saveFloor},
		{"DELETE", "/api/v1/floor/:id", Admin, s.deleteFloor},
		{"GET", "/api/v1/floor/:id/nodes", Auth, s.floorNodes},
		{"POST", "/api/v1/floor/:id/nodes", Admin, s.createNode},
		{"POST", "/api/v1/node/:id", Admin, s.updateNode},
		{"DELETE", "/api/v1/node/:id", Admin, s.deleteNode},
		{"GET", "/api/v1/floor/:id/edges", Auth, s.floorEdges},
		{"POST", "/api/v1/floor/:id/edges", Admin, s.createEdge},
		{"POST", "/api/v1/edge/:id", Admin, s.updateEdge},
		{"DELETE", "/api/v1/edge/:id", Admin, s.deleteEdge},
		{"GET", "/api/v1/floor/:id/graph", Auth, s.floorGraph},
		{"POST", "/api/v1/floor/:id/graph", Admin, s.replaceFloorGraph},
		{"POST", "/api/v1/navigation/pathfind", TokenAuth, s.pathfind},
		{"GET", "/api/v1/navigation/tokens", Admin, s.listNavTokens},
		{"POST", "/api/v1/navigation/tokens", Admin, s.createNavToken},
		{"DELETE", "/api/v1/navigation/token/:id", Admin, s.deleteNavToken},
		{"GET", "/api/v1/navigation/mobile-key", Auth, s.mobileKey},
		{"POST", "/api/v1/floor/:id/map", Admin, s.putFloorImage},
		{"GET", "/api/v1/navigation/floor/:id/map", TokenAuth, s.floorImage},
		{"GET", "/api/v1/navigation/project/:id", TokenAuth, s.navProject},
		{"GET", "/api/v1/navigation/project/:id/sha", TokenAuth, s.navProjectSHA},
		{"GET", "/api/v1/navigation/mobile/snapshot", TokenAuth, s.mobileSnapshot},
		{"GET", "/api/v1/navigation/mobile/catalog", TokenAuth, s.mobileCatalog},
		{"GET", "/api/v1/navigation/mobile/project/:id", TokenAuth, s.mobileProject},

		// Maps, zones and gateway placement (issue 5: maps*.go); the
		// navigation graph and the tracking engine both draw on them, so
		// either feature serves them (503 with neither).
		{"POST", "/api/v1/maps/upload", Admin, s.needMaps(s.uploadMap)},
		{"GET", "/api/v1/maps", Auth, s.needMaps(s.listMaps)},
		{"POST", "/api/v1/maps", Admin, s.needMaps(s.createMap)},
		{"GET", "/api/v1/map/:id", Auth, s.needMaps(s.getMap)},
		{"POST", "/api/v1/map/:id", Admin, s.needMaps(s.saveMap)},
		{"DELETE", "/api/v1/map/:id", Admin, s.needMaps(s.deleteMap)},
		{"GET", "/api/v1/maps/image", Auth, s.needMaps(s.mapImage)},
		{"GET", "/api/v1/maps/overview", Auth, s.needMaps(s.mapsOverview)},
		{"GET", "/api/v1/maps/:id/overview", Auth, s.needMaps(s.mapOverview)},
		{"GET", "/api/v1/maps/:id/zones", Auth, s.needMaps(s.mapZones)},
		{"POST", "/api/v1/maps/:id/zones", Admin, s.needMaps(s.createZone)},
		{"GET", "/api/v1/maps/:id/gateways", Auth, s.needMaps(s.mapGateways)},
		{"POST", "/api/v1/maps/:id/gateways", Admin, s.needMaps(s.placeGateway)},
		{"DELETE", "/api/v1/maps/:id/gateways/:gateway", Admin, s.needMaps(s.unplaceGateway)},
		{"GET", "/api/v1/zone/:id", Auth, s.needMaps(s.getZone)},
		{"POST", "/api/v1/zone/:id", Admin, s.needMaps(s.updateZone)},
		{"DELETE", "/api/v1/zone/:id", Admin, s.needMaps(s.deleteZone)},
		{"POST", "/api/v1/zone/:id/adjacency", Admin, s.needMaps(s.setZoneAdjacency)},

		// Tracking, survey samples, simple-user location, integration
		// locations and the live feed (issue 5: tracking*.go, userrtls.go,
		// integration_rtls.go, ws*.go). All answer 400 without feature rtls.
		{"GET", "/api/v1/tracking/start/:alg", Admin, s.trackingStart},
		{"GET", "/api/v1/tracking/stop", Admin, s.trackingStop},
		{"GET", "/api/v1/tracking/status", Auth, s.trackingStatus},
		{"GET", "/api/v1/tracking/algorithms", Auth, s.trackingAlgorithms},
		{"GET", "/api/v1/tracking/algorithms/current", Auth, s.trackingCurrent},
		{"GET", "/api/v1/tracking/:id", Auth, s.trackingAsset},
		{"POST", "/api/v1/tracking/survey/start", Admin, s.surveyStart},
		{"POST", "/api/v1/tracking/survey/stop", Admin, s.surveyStop},
		{"GET", "/api/v1/tracking/samples", Admin, s.listSamples},
		{"DELETE", "/api/v1/tracking/samples", Admin, s.deleteSamples},
		{"DELETE", "/api/v1/tracking/sample/:id", Admin, s.deleteSample},
		{"GET", "/api/v1/user/rtls/trackable-beacons", Auth, s.userTrackableBeacons},
		{"GET", "/api/v1/user/rtls/beacons/:mac/zone-intervals", Auth, s.userZoneIntervals},
		{"GET", "/api/v1/integration/beacons", Integration, s.integrationBeacons},
		{"GET", "/api/v1/integration/beacons/locations", Integration, s.integrationLocations},
		{"GET", "/api/v1/integration/beacons/:mac/location", Integration, s.integrationLocation},
		{"GET", "/api/v1/integration/zones", Integration, s.integrationZones},
		{"GET", "/ws", None, s.ws},
		// Fingerprint survey and model (navsurvey.go).
		{"POST", "/api/v1/navigation/floor/:id/survey", Admin, s.uploadSurvey},
		{"GET", "/api/v1/navigation/floor/:id/survey", Admin, s.listSurvey},
		{"GET", "/api/v1/navigation/floor/:id/survey/export", Admin, s.exportSurvey},
		{"DELETE", "/api/v1/navigation/floor/:id/survey", Admin, s.deleteSurvey},
		{"DELETE", "/api/v1/navigation/survey/:id", Admin, s.deleteSurveySample},
		{"GET", "/api/v1/navigation/floor/:id/fingerprint-model", TokenAuth, s.fingerprintModel},
		{"GET", "/api/v1/navigation/floor/:id/fingerprint-model/eval", Auth, s.fingerprintEval},
		// Integration contract, interface templates, user session, bug
		// tracker (issue 11: openapi.go, integration_docs.go, templates.go,
		// session.go, bugs.go; live preview in preview.go).
		{"GET", "/api/v1/integration/openapi.json", None, s.openAPI},
		{"GET", "/integration/docs", None, s.integrationDocs},
		{"GET", "/integration/docs/:filename", None, s.integrationDocs},
		{"GET", "/api/v1/interface-templates", Admin, s.listTemplates},
		{"POST", "/api/v1/interface-templates", Admin, s.createTemplate},
		{"GET", "/api/v1/interface-templates/:id", Admin, s.getTemplate},
		{"PUT", "/api/v1/interface-templates/:id", Admin, s.updateTemplate},
		{"DELETE", "/api/v1/interface-templates/:id", Admin, s.deleteTemplate},
		{"POST", "/api/v1/interface-templates/:id/clone", Admin, s.cloneTemplate},
		{"PUT", "/api/v1/users/:userId/template", Admin, s.assignTemplate},
		{"GET", "/api/v1/user/session", Auth, s.session},
		{"POST", "/api/v1/bugs", Auth, s.fileBug},
		{"GET", "/api/v1/bugs", Admin, s.listBugs},
		{"GET", "/api/v1/bugs/:id", Admin, s.getBug},
		{"GET", "/api/v1/bugs/:id/screenshot", Admin, s.bugScreenshot},
		{"POST", "/api/v1/bugs/:id/close", Admin, s.closeBug},
	}
}
